"""A short multiple-choice knowledge check built from core ipywidgets.

Each question shows its choices as radio buttons and a Check button; checking says right or
wrong and explains why. Nothing is graded or stored: it is for the reader.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Sequence

import ipywidgets as w

__all__ = ["Question", "Quiz"]


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
        if len(set(self.choices)) != len(self.choices):
            raise ValueError(f"choices must differ: {self.prompt!r}")
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not one of the {len(self.choices)} choices: {self.prompt!r}")


class Quiz:
    """Display with ``Quiz([...])`` as a cell's last line; ``choose``/``check`` drive it from code."""

    def __init__(self, questions: Sequence[Question], title: str = "Check your understanding"):
        if not questions:
            raise ValueError("a quiz needs at least one question")
        self.questions = list(questions)
        self.radios, self.feedback, self.buttons = [], [], []
        self.correct: list[bool | None] = [None] * len(self.questions)
        boxes = [w.HTML(value=f"<h4>{html.escape(title)}</h4>")]
        for number, question in enumerate(self.questions):
            radio = w.RadioButtons(options=list(question.choices), value=None, layout=w.Layout(width="auto"))
            button = w.Button(description="Check", layout=w.Layout(width="90px"))
            feedback = w.HTML(value="")
            button.on_click(lambda _button, number=number: self.check(number))
            self.radios.append(radio)
            self.buttons.append(button)
            self.feedback.append(feedback)
            prompt = w.HTML(value=f"<b>{number + 1}.</b> {html.escape(question.prompt)}")
            boxes.append(w.VBox([prompt, radio, w.HBox([button, feedback])]))
        self.score_line = w.HTML(value="")
        self.widget = w.VBox(boxes + [self.score_line])

    def choose(self, number: int, choice: int) -> None:
        """Select choice ``choice`` of question ``number`` (both counted from 0)."""
        self.radios[number].value = self.questions[number].choices[choice]

    def check(self, number: int) -> bool | None:
        """Check question ``number``; return whether it is right (None when nothing is chosen)."""
        question, radio = self.questions[number], self.radios[number]
        if radio.value is None:
            self.feedback[number].value = "<i>choose an answer first</i>"
            self.correct[number] = None
            return None
        right = radio.value == question.choices[question.answer]
        self.correct[number] = right
        verdict = "<span style='color:#1e7b34'>✓ right.</span>" if right else (
            "<span style='color:#c0392b'>✗ not quite.</span>")
        self.feedback[number].value = f"{verdict} {html.escape(question.explanation)}"
        answered = [c for c in self.correct if c is not None]
        self.score_line.value = f"{sum(answered)} of {len(self.questions)} right so far"
        return right

    @property
    def score(self) -> int:
        return sum(1 for c in self.correct if c)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
