"""The reader's own checks, built from core ipywidgets: a short multiple-choice quiz, and hints for an exercise.

Each question shows its choices as radio buttons and a Check button; checking says right or
wrong and gives the explanation of the choice that was picked: why it is right, or what it gets
wrong. Nothing is graded or stored: it is for the reader.

Questions are written with the right choice anywhere; the quiz shows the choices in an order
of its own, shuffled by a fixed seed drawn from the prompt, so the right answer's position
tells the reader nothing and the same question looks the same every time. A quiz shows all its
questions, or one at a time (``quiz.question(0)``, a slide each). In prompts, choices,
explanations and hints, text between backticks is shown as code.

An exercise's :class:`Hints` (one to three) sit behind a button that shows the next one at each
click, so a reader takes only as much help as they need.

For a page without a kernel (``GPULAB_STATIC=1``, as ``make site`` sets), both are plain HTML that
needs no kernel and no script: each choice is a radio button, and picking one shows whether it is
right and its explanation (CSS alone: ``:checked ~``), nothing before; hints are nested
``<details>``, each one's summary inside the one before, so they open one at a time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import random
import re
from collections.abc import Sequence
from typing import NamedTuple

import ipywidgets as w

__all__ = ["Choice", "Hints", "Question", "Quiz", "QuizQuestion", "inline_code"]

_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> str:
    """``text`` as HTML, with each `span in backticks` set as ``<code>``."""
    parts = _CODE.split(text)
    # split() alternates: plain text at even positions, code at odd ones.
    return "".join(f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part) for i, part in enumerate(parts))


def _plain(text: str) -> str:
    """Radio-button labels cannot hold markup: drop the backticks, keep the code."""
    return _CODE.sub(r"\1", text)


class Choice(NamedTuple):
    """One choice of a question: what the reader may pick, and why it is right or what it gets wrong."""

    text: str
    why: str


def _choice(choice, prompt: str) -> Choice:
    if isinstance(choice, str):
        raise ValueError(f"choice {choice!r} has no explanation; write it as (text, why): {prompt!r}")
    if len(choice) != 2 or not all(isinstance(part, str) and part.strip() for part in choice):
        raise ValueError(f"a choice is (text, why), both non-empty text, not {choice!r}: {prompt!r}")
    return Choice(*choice)


@dataclasses.dataclass(frozen=True)
class Question:
    """A prompt, its choices, each ``(text, why)``, and the index of the right one.

    ``why`` is what the reader reads after picking that choice: for the right one, why it is right;
    for a wrong one, what it mistakes and what is so instead.
    """

    prompt: str
    choices: Sequence[Choice]
    answer: int

    def __post_init__(self):
        choices = tuple(_choice(choice, self.prompt) for choice in self.choices)
        object.__setattr__(self, "choices", choices)
        if len(choices) < 2:
            raise ValueError(f"a question needs at least two choices: {self.prompt!r}")
        if len({_plain(c.text) for c in choices}) != len(choices):
            raise ValueError(f"choices must differ: {self.prompt!r}")
        if len({c.why for c in choices}) != len(choices):
            raise ValueError(f"each choice needs an explanation of its own: {self.prompt!r}")
        if not 0 <= self.answer < len(choices):
            raise ValueError(f"answer {self.answer} is not one of the {len(choices)} choices: {self.prompt!r}")

    @property
    def order(self) -> list[int]:
        """The choices' indices in the order they are shown: a shuffle seeded by the prompt."""
        seed = int.from_bytes(hashlib.sha256(self.prompt.encode("utf-8")).digest()[:8], "big")
        order = list(range(len(self.choices)))
        random.Random(seed).shuffle(order)
        return order

    @property
    def shown_answer(self) -> int:
        """Where the right choice appears on screen (counted from 0)."""
        return self.order.index(self.answer)

    def mark(self, choice: int) -> str:
        """What picking ``choice`` is called: right or not quite."""
        return "✓ right." if choice == self.answer else "✗ not quite."


# Hidden until its choice is picked; told apart by a mark and a word, not by colour alone.
_STATIC_STYLE = (
    "<style>.gpulab-question{border:1px solid #999;border-radius:4px;margin:0.6em 0;padding:0.4em 0.8em}"
    ".gpulab-question legend{font-size:1rem;float:none;width:auto;padding:0 0.3em;margin:0}"
    ".gpulab-choice label{margin-left:0.4em}"
    ".gpulab-verdict{display:none;margin:0.2em 0 0.4em 1.6em}"
    ".gpulab-choice input:checked ~ .gpulab-verdict{display:block}"
    ".gpulab-verdict.right b{color:#1e7b34}.gpulab-verdict.wrong b{color:#c0392b}</style>"
)


class Quiz:
    """Display with ``Quiz([...])`` as a cell's last line, or one question at a time with ``quiz.question(0)``
    (a slide each); ``choose``/``check`` drive it from code."""

    def __init__(self, questions: Sequence[Question], title: str = "Check your understanding"):
        if not questions:
            raise ValueError("a quiz needs at least one question")
        self.questions = list(questions)
        self.title = title
        self.radios, self.feedback, self.buttons = [], [], []
        self.correct: list[bool | None] = [None] * len(self.questions)
        boxes = [w.HTML(value=f"<h4>{html.escape(title)}</h4>")]
        for number, question in enumerate(self.questions):
            # Each option's value is the choice's index as written, whatever its place on screen.
            options = [(_plain(question.choices[i].text), i) for i in question.order]
            radio = w.RadioButtons(options=options, value=None, layout=w.Layout(width="auto"))
            button = w.Button(description="Check", layout=w.Layout(width="90px"))
            feedback = w.HTML(value="")
            button.on_click(lambda _button, number=number: self.check(number))
            self.radios.append(radio)
            self.buttons.append(button)
            self.feedback.append(feedback)
            prompt = w.HTML(value=f"<b>{number + 1}.</b> {inline_code(question.prompt)}")
            boxes.append(w.VBox([prompt, radio, w.HBox([button, feedback])]))
        self.question_boxes = boxes[1:]
        self.score_line = w.HTML(value="")
        self.widget = w.VBox(boxes + [self.score_line])

    def question(self, number: int) -> QuizQuestion:
        """Question ``number`` (from 0) alone, to show in a cell of its own: the same radio buttons and Check."""
        if not 0 <= number < len(self.questions):
            raise IndexError(f"question {number}: the quiz has {len(self.questions)} (from 0)")
        return QuizQuestion(self, number)

    def choose(self, number: int, choice: int) -> None:
        """Select choice ``choice`` (its index as written in the Question) of question ``number``."""
        self.radios[number].value = choice

    def check(self, number: int) -> bool | None:
        """Check question ``number``: show the picked choice's explanation; return whether it is right (None when
        nothing is chosen)."""
        question, radio = self.questions[number], self.radios[number]
        # Cleared first, so that checking again shows as a change even when the verdict is the same.
        self.feedback[number].value = ""
        if radio.value is None:
            self.feedback[number].value = "<i>choose an answer first</i>"
            self.correct[number] = None
            return None
        right = radio.value == question.answer
        self.correct[number] = right
        colour = "#1e7b34" if right else "#c0392b"
        self.feedback[number].value = (
            f"<span style='color:{colour}'>{question.mark(radio.value)}</span> "
            f"{inline_code(question.choices[radio.value].why)}"
        )
        answered = [c for c in self.correct if c is not None]
        self.score_line.value = f"{sum(answered)} of {len(self.questions)} right so far"
        return right

    @property
    def score(self) -> int:
        return sum(1 for c in self.correct if c)

    def static_html(self, numbers: Sequence[int] | None = None) -> str:
        """The quiz (or the questions ``numbers`` alone) as HTML that works without a kernel or a script: a
        choice's verdict and explanation show once it is picked."""
        key = hashlib.sha256("\n".join(q.prompt for q in self.questions).encode("utf-8")).hexdigest()[:10]
        title = f"<h4>{html.escape(self.title)}</h4>" if numbers is None else ""
        parts = [_STATIC_STYLE, f"<div class='gpulab-quiz'>{title}"]
        for number in range(len(self.questions)) if numbers is None else numbers:
            question = self.questions[number]
            name = f"gpulab-quiz-{key}-{number}"
            parts.append(
                f"<fieldset class='gpulab-question'><legend><b>{number + 1}.</b> {inline_code(question.prompt)}</legend>"
            )
            for index in question.order:
                kind = "right" if index == question.answer else "wrong"
                parts.append(
                    f"<div class='gpulab-choice'><input type='radio' name='{name}' id='{name}-{index}' "
                    f"value='{index}'><label for='{name}-{index}'>{inline_code(question.choices[index].text)}</label>"
                    f"<div class='gpulab-verdict {kind}' role='status'><b>{question.mark(index)}</b> "
                    f"{inline_code(question.choices[index].why)}</div></div>"
                )
            parts.append("</fieldset>")
        parts.append("</div>")
        return "".join(parts)

    def _ipython_display_(self) -> None:
        _display(self)


class QuizQuestion:
    """One question of a :class:`Quiz`, shown alone (``quiz.question(0)`` as a cell's last line)."""

    def __init__(self, quiz: Quiz, number: int):
        self.quiz, self.number = quiz, number
        self.widget = quiz.question_boxes[number]

    def static_html(self) -> str:
        return self.quiz.static_html([self.number])

    def _ipython_display_(self) -> None:
        _display(self)


_HINT_STYLE = (
    "<style>.gpulab-hints details{margin:0.3em 0 0.3em 0}.gpulab-hints summary{cursor:pointer;font-weight:bold}"
    ".gpulab-hints p{margin:0.3em 0 0.3em 1.2em}</style>"
)


class Hints:
    """One to three hints for an exercise, revealed one at a time: display with ``Hints([...])`` as a cell's
    last line; each click on its button (or :meth:`reveal`) shows the next.

    Hints guide; they never give the solution. The first points where to look, the last comes closest.
    """

    def __init__(self, hints: Sequence[str]):
        if isinstance(hints, str):
            raise ValueError("give the hints as a list of texts, not one text")
        hints = list(hints)
        if not 1 <= len(hints) <= 3:
            raise ValueError(f"an exercise has one to three hints, not {len(hints)}")
        if not all(isinstance(hint, str) and hint.strip() for hint in hints) or len(set(hints)) != len(hints):
            raise ValueError("each hint is text of its own, not empty")
        self.hints = hints
        self.shown = 0
        self.text = w.HTML(value="")
        self.button = w.Button(description=self._label(), layout=w.Layout(width="auto"))
        self.button.on_click(lambda _button: self.reveal())
        self.widget = w.VBox([self.text, self.button])

    def _label(self) -> str:
        if self.shown == len(self.hints):
            return f"All {len(self.hints)} hints shown" if len(self.hints) > 1 else "The hint is shown"
        return f"Show a hint ({self.shown + 1} of {len(self.hints)})"

    def _hint_html(self, index: int) -> str:
        return f"<b>Hint {index + 1} of {len(self.hints)}.</b> {inline_code(self.hints[index])}"

    def reveal(self) -> str | None:
        """Show the next hint and return it; None when every hint is already shown."""
        if self.shown == len(self.hints):
            return None
        self.shown += 1
        self.text.value = "".join(f"<p>{self._hint_html(i)}</p>" for i in range(self.shown))
        self.button.description = self._label()
        self.button.disabled = self.shown == len(self.hints)
        return self.hints[self.shown - 1]

    def static_html(self) -> str:
        """The hints as nested ``<details>``: each opens to its hint and the summary of the next, no script."""
        inner = ""
        for index in reversed(range(len(self.hints))):
            summary = f"Show a hint ({index + 1} of {len(self.hints)})"
            inner = f"<details><summary>{summary}</summary><p>{self._hint_html(index)}</p>{inner}</details>"
        return f"{_HINT_STYLE}<div class='gpulab-hints'>{inner}</div>"

    def _ipython_display_(self) -> None:
        _display(self)


def _display(thing: Quiz | QuizQuestion | Hints) -> None:
    from IPython.display import HTML, display

    from .widgets import static_outputs

    display(HTML(thing.static_html()) if static_outputs() else thing.widget)
