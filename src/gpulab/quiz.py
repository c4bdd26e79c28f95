"""A short multiple-choice knowledge check built from core ipywidgets.

Each question shows its choices as radio buttons and a Check button; checking says right or
wrong and explains why. Nothing is graded or stored: it is for the reader.

Questions are written with the right choice anywhere; the quiz shows the choices in an order
of its own, shuffled by a fixed seed drawn from the prompt, so the right answer's position
tells the reader nothing and the same question looks the same every time. In prompts and
explanations, text between backticks is shown as code.

For a page without a kernel (``GPULAB_STATIC=1``, as ``make site`` sets), a quiz is shown as plain
HTML that needs no kernel and no script: each choice is a radio button, and picking one shows
whether it is right and the explanation (CSS alone: ``:checked ~``), nothing before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import random
import re
from collections.abc import Sequence

import ipywidgets as w

__all__ = ["Question", "Quiz", "inline_code"]

_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> str:
    """``text`` as HTML, with each `span in backticks` set as ``<code>``."""
    parts = _CODE.split(text)
    # split() alternates: plain text at even positions, code at odd ones.
    return "".join(f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part) for i, part in enumerate(parts))


def _plain(text: str) -> str:
    """Radio-button labels cannot hold markup: drop the backticks, keep the code."""
    return _CODE.sub(r"\1", text)


@dataclasses.dataclass(frozen=True)
class Question:
    """A prompt, its choices, the index of the right choice and why it is right."""

    prompt: str
    choices: Sequence[str]
    answer: int
    explanation: str

    def __post_init__(self):
        if len(self.choices) < 2:
            raise ValueError(f"a question needs at least two choices: {self.prompt!r}")
        if len({_plain(c) for c in self.choices}) != len(self.choices):
            raise ValueError(f"choices must differ: {self.prompt!r}")
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not one of the {len(self.choices)} choices: {self.prompt!r}")

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
    """Display with ``Quiz([...])`` as a cell's last line; ``choose``/``check`` drive it from code."""

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
            options = [(_plain(question.choices[i]), i) for i in question.order]
            radio = w.RadioButtons(options=options, value=None, layout=w.Layout(width="auto"))
            button = w.Button(description="Check", layout=w.Layout(width="90px"))
            feedback = w.HTML(value="")
            button.on_click(lambda _button, number=number: self.check(number))
            self.radios.append(radio)
            self.buttons.append(button)
            self.feedback.append(feedback)
            prompt = w.HTML(value=f"<b>{number + 1}.</b> {inline_code(question.prompt)}")
            boxes.append(w.VBox([prompt, radio, w.HBox([button, feedback])]))
        self.score_line = w.HTML(value="")
        self.widget = w.VBox(boxes + [self.score_line])

    def choose(self, number: int, choice: int) -> None:
        """Select choice ``choice`` (its index as written in the Question) of question ``number``."""
        self.radios[number].value = choice

    def check(self, number: int) -> bool | None:
        """Check question ``number``; return whether it is right (None when nothing is chosen)."""
        question, radio = self.questions[number], self.radios[number]
        # Cleared first, so that checking again shows as a change even when the verdict is the same.
        self.feedback[number].value = ""
        if radio.value is None:
            self.feedback[number].value = "<i>choose an answer first</i>"
            self.correct[number] = None
            return None
        right = radio.value == question.answer
        self.correct[number] = right
        verdict = (
            "<span style='color:#1e7b34'>✓ right.</span>"
            if right
            else ("<span style='color:#c0392b'>✗ not quite.</span>")
        )
        self.feedback[number].value = f"{verdict} {inline_code(question.explanation)}"
        answered = [c for c in self.correct if c is not None]
        self.score_line.value = f"{sum(answered)} of {len(self.questions)} right so far"
        return right

    @property
    def score(self) -> int:
        return sum(1 for c in self.correct if c)

    def static_html(self) -> str:
        """The quiz as HTML that works without a kernel or a script: the verdict shows once a choice is picked."""
        key = hashlib.sha256("\n".join(q.prompt for q in self.questions).encode("utf-8")).hexdigest()[:10]
        parts = [_STATIC_STYLE, f"<div class='gpulab-quiz'><h4>{html.escape(self.title)}</h4>"]
        for number, question in enumerate(self.questions):
            name = f"gpulab-quiz-{key}-{number}"
            parts.append(
                f"<fieldset class='gpulab-question'><legend><b>{number + 1}.</b> {inline_code(question.prompt)}</legend>"
            )
            for index in question.order:
                right = index == question.answer
                verdict = "✓ right." if right else "✗ not quite."
                parts.append(
                    f"<div class='gpulab-choice'><input type='radio' name='{name}' id='{name}-{index}' "
                    f"value='{index}'><label for='{name}-{index}'>{inline_code(question.choices[index])}</label>"
                    f"<div class='gpulab-verdict {'right' if right else 'wrong'}' role='status'>"
                    f"<b>{verdict}</b> {inline_code(question.explanation)}</div></div>"
                )
            parts.append("</fieldset>")
        parts.append("</div>")
        return "".join(parts)

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        from .widgets import static_outputs

        display(HTML(self.static_html()) if static_outputs() else self.widget)
