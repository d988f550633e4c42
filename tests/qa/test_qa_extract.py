"""Extraction on hand-written model outputs: each hard case extracts exactly or is refused with its reason."""
from __future__ import annotations

import pytest

from xmdata.tasks.qa.extract import LabelPattern, extract
from xmdata.tasks.qa.labels import ENGLISH, known_labels, with_english
from xmdata.tasks.qa.pack import PackError, pack

QUERY = "<|image_1|>\nRepresent the given image with the following question: What is on the right"
POSITIVE = "The car is on the right side"
NEGATIVE = "A dog on the left"
ENGLISH_PATTERN = LabelPattern.build(ENGLISH)


def run(target: str, output: str, query=QUERY, positive=POSITIVE, negative=None):
    labels, _ = known_labels([target])
    packed = pack(query, positive, negative)
    sources = [query, positive] + ([negative] if negative else [])
    return extract(output, packed, sources, LabelPattern.build(with_english(labels[target])), ENGLISH_PATTERN)


def test_packing_takes_out_placeholder_and_adds_periods():
    packed = pack(QUERY, POSITIVE, NEGATIVE)
    assert packed.text == ("Question: Represent the given image with the following question: What is on the "
                           "right. Answer: The car is on the right side. Answer: A dog on the left.")
    assert [m.placeholder for m in packed.parts] == ["<|image_1|>\n", "", ""]
    assert pack("Why?\nSay it", "Yes!").parts[0].flattened_newlines == 1
    with pytest.raises(PackError, match="placeholder_inside_text"):
        pack("Look at <|image_1|> here", "x")
    with pytest.raises(PackError, match="empty_text"):
        pack("<|image_1|>\n", "x")


@pytest.mark.parametrize("target, output, expected", [
    ("it", "Domanda: Rappresenta l'immagine data con la seguente domanda: cosa c'è a destra. "
           "Risposta: L'auto è sul lato destro.",
     [QUERY.split("\n")[0] + "\nRappresenta l'immagine data con la seguente domanda: cosa c'è a destra",
      "L'auto è sul lato destro"]),
    # English labels kept by the model, odd case and spacing, French spacing before the colon
    ("fr", "QUESTION :Représentez l'image. answer  :  La voiture est à droite.",
     ["<|image_1|>\nReprésentez l'image", "La voiture est à droite"]),
    # a label word inside the answer's text is not a label (no colon), nor a leak (not at an edge)
    ("fr", "Question : Quelle est la réponse ? Réponse : La réponse est oui.",
     ["<|image_1|>\nQuelle est la réponse ?", "La réponse est oui"]),
    # CJK with full-width colons and punctuation, no spaces
    ("zh", "问题：用下面的问题表示给定图像：右边是什么。答案：汽车在右边。",
     ["<|image_1|>\n用下面的问题表示给定图像：右边是什么", "汽车在右边"]),
    ("ja", "質問：右側には何がありますか？回答：車は右側にあります。",
     ["<|image_1|>\n右側には何がありますか？", "車は右側にあります"]),
    # RTL with bidi marks around the labels
    ("ar", "\u200fسؤال: ما الذي على اليمين؟ \u200fإجابة: السيارة على الجانب الأيمن.",
     ["<|image_1|>\nما الذي على اليمين؟", "السيارة على الجانب الأيمن"]),
    ("he", "שאלה: מה נמצא בצד ימין? תשובה: המכונית בצד ימין.",
     ["<|image_1|>\nמה נמצא בצד ימין?", "המכונית בצד ימין"]),
])
def test_outputs_that_extract(target, output, expected):
    assert run(target, output) == (expected, None)


@pytest.mark.parametrize("target, output, reason", [
    ("fr", "", "empty_output"),
    ("fr", "Représentez l'image. La voiture est à droite.", "label_missing"),
    ("fr", "Question : Représentez l'image. Réponse La voiture est à droite.", "colon_missing"),
    ("fr", "Question : Quoi ? Réponse : Droite. Réponse : Gauche.", "part_count_mismatch"),
    ("fr", "Réponse : La voiture est à droite. Question : Représentez l'image.", "parts_reordered"),
    ("fr", "Voici la traduction. Question : Quoi ? Réponse : Droite.", "text_before_label"),
    ("fr", "Question : Représentez l'image. Réponse : .", "empty_part"),
    ("de", "Frage: Was ist rechts? Antwort: Antwort Das Auto ist rechts.", "label_leak"),
    ("fr", "Question : Représentez l'image. Réponse : <|image_1|> La voiture est à droite.",
     "placeholder_in_output"),
    ("es", "Pregunta: ¿Qué hay a la derecha? Respuesta: El coche image_1|> está.", "placeholder_in_output"),
])
def test_outputs_refused_with_their_reason(target, output, reason):
    assert run(target, output) == (None, reason)


def test_placeholder_in_the_positive_goes_back_to_the_positive_and_negative_is_split_off():
    parts, reason = run("de", "Frage: Finde ein Bild des Hundes. Antwort: Stelle das Bild dar. Antwort: Eine Katze.",
                        query="Find an image of the dog", positive="<|image_1|>\nRepresent the given image",
                        negative="A cat")
    assert reason is None
    assert parts == ["Finde ein Bild des Hundes", "<|image_1|>\nStelle das Bild dar", "Eine Katze"]


def test_source_that_starts_with_a_label_word_allows_it_at_the_edge():
    assert run("en", "Question: Answer the question. Answer: Yes.", query="Answer the question",
               positive="Yes") == (["Answer the question", "Yes"], None)


def test_every_table_language_has_two_distinct_label_sets():
    from xmdata.tasks.selection.language_areas import load_language_areas

    codes = {c for a in load_language_areas().languages.values() for s in ("m2m100", "madlad")
             if (c := a.codes.get(s))}
    found, missing = known_labels(sorted(codes))
    assert not missing
    for entry in found.values():
        assert entry["question"] and entry["answer"]
        assert not {w.casefold() for w in entry["question"]} & {w.casefold() for w in entry["answer"]}
