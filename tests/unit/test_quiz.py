import re

import pytest

from gpulab import course
from gpulab.quiz import Question, Quiz, inline_code

from conftest import ROOT


def make_quiz():
    return Quiz(
        [
            Question("2 + 2?", ["3", "4"], 1, "Count them."),
            Question("Which is a device?", ["cpu", "banana", "tuesday"], 0, "The CPU is a device."),
        ]
    )


def test_a_right_answer_is_confirmed_with_its_explanation():
    quiz = make_quiz()
    quiz.choose(0, 1)
    quiz.buttons[0].click()
    assert quiz.correct[0] is True
    assert "right" in quiz.feedback[0].value and "Count them." in quiz.feedback[0].value
    assert quiz.score == 1 and "1 of 2" in quiz.score_line.value


def test_a_wrong_answer_is_marked_wrong():
    quiz = make_quiz()
    quiz.choose(1, 2)
    assert quiz.check(1) is False
    assert "not quite" in quiz.feedback[1].value
    assert quiz.score == 0


def test_checking_without_an_answer_asks_for_one():
    quiz = make_quiz()
    assert quiz.radios[0].value is None
    assert quiz.check(0) is None
    assert "choose an answer" in quiz.feedback[0].value


def test_choices_are_shown_in_a_stable_shuffled_order_and_checked_by_what_was_chosen():
    question = Question("Pick the fruit", ["carrot", "apple", "leek", "onion"], 1, "An apple is a fruit.")
    assert sorted(question.order) == [0, 1, 2, 3]
    assert question.order == Question("Pick the fruit", ["carrot", "apple", "leek", "onion"], 1, "").order
    quiz = Quiz([question])
    shown = [label for label, _ in quiz.radios[0].options]
    assert shown == [question.choices[i] for i in question.order]
    assert shown.index("apple") == question.shown_answer
    # Clicking the option shown at the right answer's place, as a reader would.
    quiz.radios[0].index = question.shown_answer
    assert quiz.check(0) is True
    quiz.radios[0].index = (question.shown_answer + 1) % 4
    assert quiz.check(0) is False


def test_the_right_answer_moves_between_questions():
    positions = {Question(f"question {k}", ["a", "b", "c"], 1, "").shown_answer for k in range(30)}
    assert positions == {0, 1, 2}


def test_inline_code_is_set_as_code_and_html_is_escaped():
    assert inline_code("call `x.to('cpu')` on <b>") == "call <code>x.to(&#x27;cpu&#x27;)</code> on &lt;b&gt;"
    quiz = Quiz([Question("What does `t.cpu()` return?", ["`t` itself", "a copy"], 1, "A copy: `t` stays.")])
    assert (
        "<code>t.cpu()</code>" in quiz.widget.children[1].children[0].value
        and "`" not in quiz.widget.children[1].children[0].value
    )
    assert [label for label, _ in quiz.radios[0].options if "itself" in label] == ["t itself"]
    quiz.choose(0, 1)
    quiz.check(0)
    assert "<code>t</code>" in quiz.feedback[0].value


@pytest.mark.parametrize("choices, answer", [(["only one"], 0), (["a", "b"], 2), (["a", "a"], 0), (["`a`", "a"], 0)])
def test_malformed_questions_are_rejected(choices, answer):
    with pytest.raises(ValueError):
        Question("?", choices, answer, "")


def test_an_empty_quiz_is_rejected():
    with pytest.raises(ValueError):
        Quiz([])


def lesson_quizzes():
    """Every lesson's quiz, built by running its quiz cell."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in course.read_notebook(path)["cells"]:
            source = course.cell_source(cell)
            if cell["cell_type"] == "code" and "Quiz(" in source:
                namespace: dict = {}
                body, _, last = source.rpartition("\nQuiz(")
                exec(body, namespace)
                yield path.stem, eval("Quiz(" + last, namespace)


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
        # every choice, in the order the widget shows them, one radio group per question
        assert [int(value) for _, value, *_ in choices] == question.order
        assert len({name for name, *_ in choices}) == 1
        for _, value, label, kind, verdict, explanation in choices:
            right = int(value) == question.answer
            assert label == question.choices[int(value)] and explanation == question.explanation
            assert (kind, verdict) == (("right", "✓ right.") if right else ("wrong", "✗ not quite."))
