import pytest

from gpulab.quiz import Question, Quiz


def make_quiz():
    return Quiz([
        Question("2 + 2?", ["3", "4"], 1, "Count them."),
        Question("Which is a device?", ["cpu", "banana", "tuesday"], 0, "The CPU is a device."),
    ])


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


@pytest.mark.parametrize("choices, answer", [(["only one"], 0), (["a", "b"], 2), (["a", "a"], 0)])
def test_malformed_questions_are_rejected(choices, answer):
    with pytest.raises(ValueError):
        Question("?", choices, answer, "")


def test_an_empty_quiz_is_rejected():
    with pytest.raises(ValueError):
        Quiz([])
