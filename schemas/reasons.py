"""Every reason a rejects table may hold: the one registry the stages write through.

A row a stage refuses goes to a rejects table with its stage and one of these reasons
(`tasks/build/rejects.make_rejects` refuses a name that is not here, so a stage cannot write an
unregistered reason; tests/schemas/test_reasons.py scans the code for reason literals). The docs'
reference page (docs/reference/reasons.md) is generated from this table: what a reason means, which
stages write it and what to do about it. `import_*` stands for every importer's stage
(`import_<format>`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    name: str
    stages: tuple[str, ...]
    meaning: str
    action: str


IMAGE_STAGES = ("clip_score", "clean_signatures", "mmmeb_embed_*")
INPUT_STAGES = ("captions", "images", "pairs", "qa_input", "import_*")

_ALL = (
    # Any input: ids
    Reason("empty_id", INPUT_STAGES, "The row's id is missing or only whitespace.",
           "Give every row an id; ids are how every stage, reject and explanation names a row."),
    Reason("duplicate_id", INPUT_STAGES, "Another row before it has the same id; the first is kept.",
           "Make ids unique at the source (source file, piece, index), not by dropping rows."),
    Reason("not_a_language_code", ("language", "import_*"),
           "The declared language (or a publisher's language key) is no language code the project knows.",
           "Use an ISO 639-1 code (639-3 where there is none); `xmdata validate` lists the rows."),
    Reason("language_code_taken", ("import_imagenet_val",),
           "A publisher's language key normalises to a code another key of the same file already holds.",
           "Nothing to do unless the kept key is the wrong one; the refused key's rows are listed."),
    # Texts
    Reason("empty_text", ("language_id", "translate", "select_translations", "translate_qa", "select_qa",
                          "clip_score", "clean_signatures", "import_composite", "import_vicr"),
           "The text is missing or only whitespace.", "Fill in or drop the text at the source."),
    Reason("no_letters", ("language_id",), "The text has no letter in any script (digits, punctuation).",
           "Nothing: language ID cannot say anything about such a text."),
    Reason("too_long", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The text (after sentence splitting) is longer than the translation model takes.",
           "Split long texts (`split_sentences`), or use a model with a longer input."),
    Reason("empty_output", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The model produced no text for this row.", "Try another model or more beams; check the source text."),
    Reason("out_of_memory", ("translate", "select_translations", "translate_qa", "select_qa", "qe_score",
                             "qa_candidate_qe"),
           "The batch ran out of GPU/CPU memory even when halved down to this one item.",
           "Run on a device with more memory, or a smaller model; the rest of the shard was kept."),
    # An llm translator's replies (tasks/translation/llm_replies.py: cleaned first, then these rules)
    Reason("truncated", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The LLM's reply stopped at max_new_tokens, not at its end-of-turn token: it may be cut short.",
           "Raise max_new_tokens_ratio / max_new_tokens_extra, or use a model that ends its turns."),
    Reason("refusal", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The LLM's reply opens as a refusal (\"I'm sorry\", \"I cannot\") instead of a translation.",
           "Read the reply (`xmdata explain`); another prompt template or model may translate it."),
    Reason("answer_not_translation", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The LLM's reply answers or comments on the text (\"The answer is\", \"This text says\") "
           "instead of translating it.",
           "Say in the prompt template that the text is to be translated, not answered."),
    Reason("copy_of_source", ("translate", "select_translations", "translate_qa", "select_qa"),
           "The LLM's reply is the source text again (case and spacing aside).",
           "Check the target language's name in the prompt; another model may translate it."),
    Reason("qe_not_finite", ("candidate_qe", "qa_candidate_qe"),
           "The quality estimator gave this candidate no number (NaN or infinite): it gets no score, so it is "
           "never chosen, and is listed here.",
           "A fault of the QE model or its weights (a broken or mis-converted checkpoint): check them, then "
           "translate again."),
    Reason("no_candidate_in_target_language", ("select_translations", "select_qa"),
           "No beam candidate passed language ID for the target (label or probability below `min_lid_prob`).",
           "Look at the candidates (`xmdata explain`); a lower `min_lid_prob` or another model may help."),
    Reason("below_min_qe", ("select_translations", "select_qa"),
           "The best candidate's quality-estimation score is below `min_qe`.",
           "Keep the threshold (it is doing its job) or lower `min_qe` after reading the candidates."),
    # Question/answer packing and extraction
    Reason("placeholder_inside_text", ("translate_qa", "select_qa"),
           "The query holds the image placeholder inside the text, where packing cannot keep it faithfully.",
           "Put the placeholder at the start or end of the query, as the source dataset does."),
    Reason("label_missing", ("translate_qa", "select_qa"),
           "The translation lost a part label (Query/Positive), so the parts cannot be split back.",
           "Try another model or more beams; other candidates are tried first."),
    Reason("colon_missing", ("translate_qa", "select_qa"), "The part labels are there but their colons are not.",
           "Try another model or more beams."),
    Reason("part_count_mismatch", ("translate_qa", "select_qa"),
           "The translation holds another number of parts than the packed source.", "Try another model or more beams."),
    Reason("parts_reordered", ("translate_qa", "select_qa"), "The parts come back in another order.",
           "Try another model or more beams."),
    Reason("text_before_label", ("translate_qa", "select_qa"), "The translation has text before its first label.",
           "Try another model or more beams."),
    Reason("empty_part", ("translate_qa", "select_qa"), "A part of the translation is empty.",
           "Try another model or more beams."),
    Reason("label_leak", ("translate_qa", "select_qa"), "A part of the translation still contains a label word.",
           "Try another model or more beams."),
    Reason("placeholder_in_output", ("translate_qa", "select_qa"),
           "The translation contains a trace of an image placeholder.", "Try another model or more beams."),
    # Images
    Reason("no_image_reference", ("clip_score",), "The row has neither an image_path nor image_bytes.",
           "Give the row an image (`image_path` under the image root, or bytes)."),
    Reason("missing_image", IMAGE_STAGES, "The image path does not exist (or is not a file).",
           "Check the image root and the path; `xmdata download-images` fetches images from URLs."),
    Reason("unreadable_image", IMAGE_STAGES, "The image file could not be read or opened.",
           "Check the file's permissions and format; the message in `value` says what failed."),
    Reason("empty_image_file", IMAGE_STAGES, "The image file or bytes are empty.", "Download the image again."),
    Reason("path_outside_root", IMAGE_STAGES, "The path's text climbs out of the image root (`..`).",
           "Give paths relative to the image root; links inside it are followed."),
    Reason("image_too_large", (*IMAGE_STAGES, "exif"),
           "The image declares more pixels than the limit (`max_image_pixels`); it is never decoded.",
           "Raise the limit if the image is genuine, or resize it."),
    Reason("corrupt_image", IMAGE_STAGES, "The image could not be decoded.", "Download the image again."),
    Reason("decoder_died", IMAGE_STAGES, "The decoder process died twice while decoding the image (killed, "
           "or out of memory): once with other images, once with this one alone.",
           "Check the image (a decompression bomb under the pixel limit?) and the worker's memory; "
           "lower the pixel limit (`--max-image-pixels` of score, dedup and contamination) or, when "
           "scoring, `--decoders`."),
    Reason("image_file_missing", ("import_*", "train_clipscore"),
           "The publisher's captions name an image the given image folder lacks (an import's --images; the "
           "image root `train clipscore` reads a release's tables under).",
           "Complete the download (or leave out `--images` to keep every row without checking)."),
    Reason("needs_image_and_text", ("mmmeb_embed_*",), "The task needs an image and a text and the row lacks one.",
           "Nothing for a dataset that has such rows; they cannot be embedded by this kind of model."),
    Reason("text_only_model", ("mmmeb_embed_*",), "The row is an image and the system embeds texts only "
           "(a `last_token` decoder without an image tower).",
           "Nothing: score that system on its text rows, or give it a model with an image tower."),
    # Geography
    Reason("no_gps", ("geocode", "exif"), "The image has no coordinates (no latitude/longitude, no EXIF GPS block).",
           "Add coordinates, or leave the image out of a geo-diverse selection."),
    Reason("invalid_coordinates", ("geocode", "exif"),
           "The coordinates are out of range or not numbers (EXIF rationals that do not parse).",
           "Fix the coordinates at the source."),
    Reason("unreadable_exif", ("exif",), "The photo's EXIF block could not be read.",
           "Check the file; the message in `value` names the error."),
    Reason("bad_coordinates", ("import_openimages",), "The publisher's GPS value for the image does not parse.",
           "Nothing: the image is left out of the import."),
    # Clean sets
    Reason("near_duplicate", ("dedup_decision", "clean_images", "clean_captions"),
           "The row matches an earlier row of the same table; `value` is its group (the first id, kept).",
           "Nothing, or loosen the thresholds if the matches are not duplicates (see the matches table)."),
    Reason("contaminated", ("contamination_decision", "clean_images", "clean_captions"),
           "The row matches a row of a reference set (an evaluation or training set); `value` is the match.",
           "Nothing, or check the matches table if a reference should not have been used."),
    Reason("image_near_duplicate", ("clean_captions", "clean_qa"),
           "The row's image was removed as a near-duplicate, so its captions/QA rows go too.",
           "Nothing: follows from the image's decision."),
    Reason("image_contaminated", ("clean_captions", "clean_qa"),
           "The row's image was removed as contaminated, so its captions/QA rows go too.",
           "Nothing: follows from the image's decision."),
    # MMMEB
    Reason("caption_without_image", ("mmmeb_tasks",), "A caption names an image that is not in the images table.",
           "Import the images with the captions."),
    Reason("class_without_label", ("mmmeb_tasks",), "An ImageNet class has no label in the language.",
           "Nothing: Babel-ImageNet has no name for that class in that language."),
    # Importers
    Reason("empty_caption", ("import_xm3600", "import_xtd10"), "The publisher's caption is empty.",
           "Nothing: the publisher's file holds an empty caption."),
    Reason("caption_not_text", ("import_xm3600",), "The publisher's caption is not a string.",
           "Nothing: the publisher's file holds a non-text caption."),
    Reason("class_index_out_of_range", ("import_imagenet_val",), "A Babel-ImageNet class index is not 0–999.",
           "Nothing: the row is left out."),
    Reason("unknown_synset", ("import_imagenet_val",), "The validation image's synset is not one of the 1,000 classes.",
           "Check the synset list given."),
    Reason("empty_or_not_text", ("import_valse",), "A VALSE caption or foil is empty or not a string.",
           "Nothing: the publisher's file holds it."),
    Reason("empty_query", ("import_mmeb_train",), "The MMEB-train row has an empty query.", "Nothing."),
    Reason("empty_positive", ("import_mmeb_train",), "The MMEB-train row has an empty positive.", "Nothing."),
    Reason("entity_without_box", ("import_flickr30k_entities",), "A phrase names an entity with no box.",
           "Nothing: Flickr30K Entities leaves some phrases unboxed."),
    Reason("malformed_row", ("import_composite", "import_vicr"), "A line of the CSV does not have the expected fields.",
           "Nothing: the line is listed in `value`."),
    Reason("no_question_or_answer", ("import_maxm",), "The MaXM item has no question or no answer.", "Nothing."),
    Reason("no_gold_label", ("import_xvnli",), "The XVNLI pair has no gold label.", "Nothing."),
    Reason("label_not_true_false", ("import_marvl",), "The MaRVL label is neither true nor false.", "Nothing."),
    Reason("rating_not_a_number", ("import_flickr8k_expert", "import_vicr"), "A rating (or VICR's rating count) is "
           "not an integer.", "Nothing."),
    Reason("rating_outside_1_4", ("import_flickr8k_expert",), "An expert rating is outside 1–4.", "Nothing."),
    Reason("votes_not_numbers", ("import_flickr8k_cf",), "A CrowdFlower vote count is not a number.", "Nothing."),
    Reason("no_votes", ("import_flickr8k_cf",), "A CrowdFlower pair has no votes.", "Nothing."),
    Reason("unknown_caption_id", ("import_flickr8k_expert", "import_flickr8k_cf"),
           "A rated pair names a caption id the captions file lacks.", "Nothing."),
    Reason("rating_outside_1_5", ("import_vicr",), "A VICR rating is outside 1–5.", "Nothing."),
    Reason("rating_count_mismatch", ("import_vicr",), "A VICR row's num_ratings differs from its filled rating "
           "cells.", "Nothing: the row is listed in `value`."),
    Reason("rating_cells_not_contiguous", ("import_vicr",), "A VICR row has an empty rating cell before a filled "
           "one.", "Nothing: the row is listed in `value`."),
    Reason("no_ratings", ("import_vicr",), "A VICR row has no rating.", "Nothing."),
    Reason("unknown_split", ("import_vicr",), "A VICR row's subset is not train, val or test.", "Nothing."),
    Reason("image_not_coco_or_flickr8k", ("import_vicr",), "A VICR row's image URL names no COCO val2014 or "
           "Flickr8k file.", "Nothing: the URL is listed in `value`."),
    Reason("votes_for_other_captions", ("import_pascal50s",),
           "A Pascal-50S triple's votes do not refer to its own two candidate captions.", "Nothing."),
)

REASONS: dict[str, Reason] = {r.name: r for r in _ALL}


class UnregisteredReason(ValueError):
    """A stage tried to write a reason that is not in REASONS (a bug in the stage, not bad input)."""


def registered(name: str) -> str:
    """NAME itself when it is a registered reason; raises UnregisteredReason otherwise."""
    if name not in REASONS:
        raise UnregisteredReason(f"reject reason {name!r} is not registered in schemas/reasons.py")
    return name
