"""Generated multilingual sentences and sentencepiece training for the tiny test models.

Fixed word lists and a seeded generator: no downloaded data, and the same seed gives the same
sentences, hence the same tokenizer files.
"""
from __future__ import annotations

import io
import random

# A dozen common words per language, enough to give each script its characters and a few merges.
WORDS: dict[str, list[str]] = {
    "en": "the a dog cat house red small runs sees water tree and child book".split(),
    "fr": "le la chien chat maison rouge petit court voit eau arbre et enfant livre".split(),
    "de": "der die Hund Katze Haus rot klein läuft sieht Wasser Baum und Kind Buch".split(),
    "es": "el la perro gato casa rojo pequeño corre ve agua árbol y niño libro".split(),
    "it": "il la cane gatto casa rosso piccolo corre vede acqua albero e bambino libro".split(),
    "zh": "狗 猫 房子 红色 小 跑 看 水 树 和 孩子 书 的 是".split(),
    "ar": "ال كلب قطة بيت أحمر صغير يجري يرى ماء شجرة و طفل كتاب".split(),
    "hi": "कुत्ता बिल्ली घर लाल छोटा दौड़ता देखता पानी पेड़ और बच्चा किताब है".split(),
    "bn": "কুকুর বিড়াল বাড়ি লাল ছোট দৌড়ায় দেখে জল গাছ এবং শিশু বই".split(),
    "te": ("కుక్క పిల్లి ఇల్లు ఎరుపు చిన్న పరుగెత్తుతుంది చూస్తుంది నీరు చెట్టు మరియు "
           "పిల్లవాడు పుస్తకం").split(),
    "fi": "koira kissa talo punainen pieni juoksee näkee vesi puu ja lapsi kirja".split(),
    "sw": "mbwa paka nyumba nyekundu ndogo anakimbia anaona maji mti na mtoto kitabu".split(),
    "ja": "犬 猫 家 赤い 小さい 走る 見る 水 木 と 子供 本 は が".split(),
    "ru": "собака кошка дом красный маленький бежит видит вода дерево и ребёнок книга".split(),
}
LANGUAGES: list[str] = list(WORDS)
_NO_SPACES = {"zh", "ja"}  # scripts written without spaces between words


def generate_sentences(count_per_language: int = 200, seed: int = 0) -> list[str]:
    """`count_per_language` random 3-8 word sentences per language, identical for the same seed."""
    rng = random.Random(seed)
    sentences = []
    for lang, words in WORDS.items():
        joiner = "" if lang in _NO_SPACES else " "
        for _ in range(count_per_language):
            sentences.append(joiner.join(rng.choice(words) for _ in range(rng.randint(3, 8))))
    return sentences


def parallel_sentences(count: int, languages: tuple[str, ...] = ("fr", "de"), seed: int = 0) -> list[dict[str, str]]:
    """`count` sentences of 3-7 words as {"en": …, language: …}, translated word for word: the word lists
    are aligned (the dog, le chien, der Hund…), so a tiny parallel corpus with no translation model."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        words = [rng.randrange(len(WORDS["en"])) for _ in range(rng.randint(3, 7))]
        rows.append({lang: ("" if lang in _NO_SPACES else " ").join(WORDS[lang][w] for w in words)
                     for lang in ("en", *languages)})
    return rows


def train_sentencepiece(sentences: list[str], **options) -> bytes:
    """The serialized sentencepiece model for these sentences.

    Trained from an iterator into memory, so the model proto records no input or output paths:
    builds in different directories give byte-identical files. One thread keeps it deterministic.
    """
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buffer, num_threads=1,
        character_coverage=1.0, minloglevel=2, **options,
    )
    return buffer.getvalue()
