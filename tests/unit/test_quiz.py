import re
from html.parser import HTMLParser

import pytest

from gpulab import course
from gpulab import quiz as quiz_module
from gpulab.quiz import Choice, Hints, Question, Quiz, QuizQuestion, inline_code

from conftest import ROOT


def make_quiz():
    return Quiz(
        [
            Question("2 + 2?", [("3", "One short: count them again."), ("4", "Count them.")], 1),
            Question(
                "Which is a device?",
                [("cpu", "The CPU is a device."), ("banana", "A fruit, not a device."), ("tuesday", "A day.")],
                0,
            ),
        ]
    )


def test_a_right_answer_is_confirmed_with_its_explanation():
    quiz = make_quiz()
    quiz.choose(0, 1)
    quiz.buttons[0].click()
    assert quiz.correct[0] is True
    assert "right" in quiz.feedback[0].value and "Count them." in quiz.feedback[0].value
    assert "One short" not in quiz.feedback[0].value
    assert quiz.score == 1 and "1 of 2" in quiz.score_line.value


def test_a_wrong_answer_is_marked_wrong_and_says_what_it_gets_wrong():
    quiz = make_quiz()
    quiz.choose(1, 2)
    assert quiz.check(1) is False
    assert "not quite" in quiz.feedback[1].value and "A day." in quiz.feedback[1].value
    assert "The CPU is a device." not in quiz.feedback[1].value  # the right answer's explanation stays hidden
    quiz.choose(1, 1)
    quiz.check(1)
    assert "A fruit, not a device." in quiz.feedback[1].value and "A day." not in quiz.feedback[1].value
    assert quiz.score == 0


def test_checking_without_an_answer_asks_for_one():
    quiz = make_quiz()
    assert quiz.radios[0].value is None
    assert quiz.check(0) is None
    assert "choose an answer" in quiz.feedback[0].value


def fruit():
    return Question(
        "Pick the fruit",
        [("carrot", "A root."), ("apple", "An apple is a fruit."), ("leek", "A stem."), ("onion", "A bulb.")],
        1,
    )


def test_choices_are_shown_in_a_stable_shuffled_order_and_checked_by_what_was_chosen():
    question = fruit()
    assert sorted(question.order) == [0, 1, 2, 3]
    assert question.order == fruit().order
    quiz = Quiz([question])
    shown = [label for label, _ in quiz.radios[0].options]
    assert shown == [question.choices[i].text for i in question.order]
    assert shown.index("apple") == question.shown_answer
    # Clicking the option shown at the right answer's place, as a reader would.
    quiz.radios[0].index = question.shown_answer
    assert quiz.check(0) is True and "An apple is a fruit." in quiz.feedback[0].value
    quiz.radios[0].index = (question.shown_answer + 1) % 4
    wrong = question.choices[question.order[(question.shown_answer + 1) % 4]]
    assert quiz.check(0) is False and wrong.why in quiz.feedback[0].value


def test_choices_are_kept_as_text_and_explanation():
    question = fruit()
    assert question.choices[1] == Choice("apple", "An apple is a fruit.")
    assert (question.choices[0].text, question.choices[0].why) == ("carrot", "A root.")


def test_the_right_answer_moves_between_questions():
    choices = [("a", "why a"), ("b", "why b"), ("c", "why c")]
    positions = {Question(f"question {k}", choices, 1).shown_answer for k in range(30)}
    assert positions == {0, 1, 2}


def test_inline_code_is_set_as_code_and_html_is_escaped():
    assert inline_code("call `x.to('cpu')` on <b>") == "call <code>x.to(&#x27;cpu&#x27;)</code> on &lt;b&gt;"
    quiz = Quiz(
        [
            Question(
                "What does `t.cpu()` return?",
                [("`t` itself", "No: `t` is on the GPU."), ("a copy", "A copy: `t` stays.")],
                1,
            )
        ]
    )
    assert (
        "<code>t.cpu()</code>" in quiz.widget.children[1].children[0].value
        and "`" not in quiz.widget.children[1].children[0].value
    )
    assert [label for label, _ in quiz.radios[0].options if "itself" in label] == ["t itself"]
    quiz.choose(0, 1)
    quiz.check(0)
    assert "<code>t</code> stays" in quiz.feedback[0].value


@pytest.mark.parametrize(
    "choices, answer",
    [
        ([("only one", "why")], 0),
        ([("a", "why a"), ("b", "why b")], 2),
        ([("a", "why a"), ("a", "why b")], 0),
        ([("`a`", "why a"), ("a", "why b")], 0),
        (["a", "b"], 0),  # a choice without its explanation
        ([("a", "why"), ("b", "why")], 0),  # one explanation for every pick
        ([("a", "why a"), ("b", " ")], 0),
        ([("a", "why a", "more"), ("b", "why b")], 0),
    ],
)
def test_malformed_questions_are_rejected(choices, answer):
    with pytest.raises(ValueError):
        Question("?", choices, answer)


def test_an_empty_quiz_is_rejected():
    with pytest.raises(ValueError):
        Quiz([])


def made_by(source: str, kind: type) -> list:
    """The ``kind`` objects (Quiz, Hints) a cell's source makes when it runs, however it shows them."""
    made = []

    class Recording(kind):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quiz_module, kind.__name__, Recording)
        exec(source, {})
    return made


def lesson_quizzes():
    """Every lesson's quiz, built by running its quiz cell."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in course.read_notebook(path)["cells"]:
            source = course.cell_source(cell)
            if cell["cell_type"] == "code" and "Quiz(" in source:
                yield from ((path.stem, quiz) for quiz in made_by(source, Quiz))


def test_lesson_quizzes_spread_their_right_answers_over_the_positions():
    quizzes = list(lesson_quizzes())
    assert len(quizzes) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    questions = [q for _, quiz in quizzes for q in quiz.questions]
    counts = {}
    for question in questions:
        counts[question.shown_answer] = counts.get(question.shown_answer, 0) + 1
    assert max(counts.values()) <= 0.5 * len(questions), f"right answers shown at positions {counts}"
    for stem, quiz in quizzes:
        positions = [q.shown_answer for q in quiz.questions]
        assert len(set(positions)) > 1, f"{stem}: every right answer is shown at position {positions[0]}"


def test_every_choice_of_every_lesson_question_explains_itself_briefly():
    # The constructor refuses a choice without an explanation, or two choices sharing one; here, each is short.
    for stem, quiz in lesson_quizzes():
        for question in quiz.questions:
            for choice in question.choices:
                assert len(choice.why) <= 240, f"{stem}: {question.prompt[:50]!r}, {choice.text[:30]!r}: keep it short"
                assert choice.why.rstrip().endswith((".", ")")), f"{stem}: {choice.why!r} is not a sentence"


def test_on_a_static_page_the_quiz_is_html_that_hides_each_verdict_until_its_choice_is_picked(monkeypatch):
    monkeypatch.setenv("GPULAB_STATIC", "1")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    quiz = make_quiz()
    quiz._ipython_display_()
    (page,) = [thing.data for thing in shown]
    assert "<script" not in page  # no kernel and no script: the radio buttons and CSS alone
    assert ".gpulab-verdict{display:none" in page and "input:checked ~ .gpulab-verdict{display:block}" in page
    for number, question in enumerate(quiz.questions):
        choices = re.findall(
            rf"<input type='radio' name='([^']+-{number})' id='[^']+' value='(\d+)'><label[^>]*>([^<]*)</label>"
            r"<div class='gpulab-verdict (right|wrong)'[^>]*><b>([^<]*)</b> ([^<]*)</div>",
            page,
        )
        # every choice, in the order the widget shows them, one radio group per question, each with its own why
        assert [int(value) for _, value, *_ in choices] == question.order
        assert len({name for name, *_ in choices}) == 1
        for _, value, label, kind, verdict, explanation in choices:
            right = int(value) == question.answer
            assert label == question.choices[int(value)].text and explanation == question.choices[int(value)].why
            assert (kind, verdict) == (("right", "✓ right.") if right else ("wrong", "✗ not quite."))


def test_a_question_shown_alone_is_that_question_and_says_why(monkeypatch):
    quiz = make_quiz()
    alone = quiz.question(1)
    assert isinstance(alone, QuizQuestion) and alone.widget is quiz.question_boxes[1]
    assert "Which is a device?" in alone.widget.children[0].value and quiz.radios[1] in alone.widget.children
    quiz.choose(1, 1)
    alone.widget.children[2].children[0].click()  # its own Check button
    assert "A fruit, not a device." in quiz.feedback[1].value
    page = alone.static_html()
    assert page.count("<fieldset") == 1 and "Which is a device?" in page and "2 + 2?" not in page
    assert "Check your understanding" not in page and "A fruit, not a device." in page
    monkeypatch.setenv("GPULAB_STATIC", "1")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    alone._ipython_display_()
    assert [thing.data for thing in shown] == [page]
    with pytest.raises(IndexError):
        quiz.question(2)


# ---------------------------------------------------------------- hints


def test_hints_are_revealed_one_at_a_time_by_the_button():
    hints = Hints(["Look at `x.device`.", "Factory functions take `device=`.", "Both, then."])
    assert hints.text.value == "" and hints.button.description == "Show a hint (1 of 3)"
    hints.button.click()
    assert "Look at <code>x.device</code>." in hints.text.value and "Factory" not in hints.text.value
    assert hints.button.description == "Show a hint (2 of 3)" and not hints.button.disabled
    assert hints.reveal() == "Factory functions take `device=`."
    assert "Factory" in hints.text.value and "Both, then." not in hints.text.value
    hints.button.click()
    assert all(text in hints.text.value for text in ("Look at", "Factory", "Both, then."))
    assert hints.button.disabled and hints.button.description == "All 3 hints shown"
    assert hints.reveal() is None and hints.shown == 3


def test_a_single_hint_says_so():
    hint = Hints(["Only this."])
    assert hint.button.description == "Show a hint (1 of 1)"
    hint.reveal()
    assert hint.button.disabled and hint.button.description == "The hint is shown"


@pytest.mark.parametrize("hints", [[], ["a", "b", "c", "d"], ["a", "a"], ["a", " "], "one string", "ab"])
def test_an_exercise_has_one_to_three_hints_of_its_own(hints):
    with pytest.raises(ValueError):
        Hints(hints)


class _Details(HTMLParser):
    """Each <summary>'s text and each hint's text, with how many <details> hold it."""

    def __init__(self):
        super().__init__()
        self.depth, self.open, self.found = 0, None, []

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.depth += 1
        elif tag in ("summary", "p"):
            self.open = [tag, self.depth, ""]

    def handle_endtag(self, tag):
        if tag == "details":
            self.depth -= 1
        elif self.open is not None and tag == self.open[0]:
            self.found.append(tuple(self.open))
            self.open = None

    def handle_data(self, data):
        if self.open is not None:
            self.open[2] += data


def test_on_a_static_page_hints_are_nested_details_that_open_one_at_a_time(monkeypatch):
    monkeypatch.setenv("GPULAB_STATIC", "1")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    Hints(["First `a`.", "Second.", "Third."])._ipython_display_()
    (page,) = [thing.data for thing in shown]
    assert "<script" not in page and "<code>a</code>" in page
    parser = _Details()
    parser.feed(page)
    # Each summary sits inside the details of the hint before it: hint k shows only once k - 1 are open.
    assert parser.found == [
        ("summary", 1, "Show a hint (1 of 3)"),
        ("p", 1, "Hint 1 of 3. First a."),
        ("summary", 2, "Show a hint (2 of 3)"),
        ("p", 2, "Hint 2 of 3. Second."),
        ("summary", 3, "Show a hint (3 of 3)"),
        ("p", 3, "Hint 3 of 3. Third."),
    ]
    assert parser.depth == 0
