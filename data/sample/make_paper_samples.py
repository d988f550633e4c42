"""Writes the paper recipes' sample inputs, each in the layout its public dataset is published in:
openimages/, mmeb-train/, xm3600/, xtd10/, maxm/, flickr30k_entities/, imagenet/, flickr8k/, vicr/.

Run `python data/sample/make_paper_samples.py` to regenerate (deterministic). Everything is made up
here: a few hand-written rows per dataset, 32x32 generated JPEGs; no file comes from the datasets.
"""
import csv
import json
import os

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
LANGS = ("en", "fr", "de", "it", "es")
SCENES = {  # image key: one caption per language (XM3600 and XTD10 samples)
    "a1": ("A red bicycle by a wall", "Un vélo rouge contre un mur", "Ein rotes Fahrrad an einer Wand",
           "Una bicicletta rossa contro un muro", "Una bicicleta roja junto a una pared"),
    "b2": ("Two children playing football", "Deux enfants jouant au football", "Zwei Kinder spielen Fußball",
           "Due bambini giocano a calcio", "Dos niños juegan al fútbol"),
    "c3": ("A bowl of rice on a table", "Un bol de riz sur une table", "Eine Schüssel Reis auf einem Tisch",
           "Una ciotola di riso sul tavolo", "Un cuenco de arroz en la mesa"),
    "d4": ("A fishing boat on the beach", "Un bateau de pêche sur la plage", "Ein Fischerboot am Strand",
           "Una barca da pesca sulla spiaggia", "Un barco de pesca en la playa"),
}


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def jpeg(path: str, n: int, size=(32, 32)) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.new("RGB", size, ((n * 53) % 256, (n * 97) % 256, (n * 151) % 256)).save(path, quality=80)


def openimages() -> None:
    """80 images with GPS from the demo's sample coordinates: validation, test and (filtered) train."""
    rows = list(csv.DictReader(open(os.path.join(HERE, "images.csv"), encoding="utf-8")))[:80]
    head = ["ImageID", "Subset", "OriginalURL", "OriginalLandingURL", "License", "AuthorProfileURL", "Author",
            "Title", "OriginalSize", "OriginalMD5", "Thumbnail300KURL", "Rotation"]
    subsets = {"validation": [], "test": []}
    gps = ["ImageID,Latitude,Longitude"]
    for n, row in enumerate(rows):
        image_id = f"{n:016x}"
        subset = "train" if n % 10 == 9 else ("validation" if n % 2 else "test")
        subsets["validation" if subset == "train" else subset].append(
            [image_id, subset, f"https://example.org/{image_id}.jpg", f"https://example.org/{image_id}",
             "https://creativecommons.org/licenses/by/2.0/", "https://example.org/author", "Sample", f"Sample {n}",
             "1000", "", "", "0"])
        latitude = "95.0" if n == 7 else row["latitude"]  # one impossible coordinate: refused
        gps.append(f"{image_id},{latitude},{row['longitude']}")
    for subset, lines in subsets.items():
        write(os.path.join(HERE, "openimages", f"{subset}-images-with-rotation.csv"),
              "\n".join(",".join(r) for r in [head] + lines) + "\n")
    write(os.path.join(HERE, "openimages", "gps.csv"), "\n".join(gps) + "\n")


def mmeb_train() -> None:
    """Three kept tasks and one the paper excludes (ChartQA), JSONL per subset."""
    tasks = {
        "A-OKVQA": [("<|image_1|>\nRepresent the given image with the following question: Which side is the car on?",
                     "On the right side"), ("<|image_1|>\nRepresent the given image with the following question: "
                                            "What is the dog holding?", "A red ball")],
        "MSCOCO_i2t": [("<|image_1|>\nFind an image caption describing the given everyday image.",
                        "A man rides a horse on the beach.")],
        "VisualNews_t2i": [("Retrieve an image of this news caption: Crowds gather in the square.",
                            "Represent the given image.")],
        "ChartQA": [("<|image_1|>\nRepresent the given chart with the following question: What is the peak?", "42")],
    }
    for task, rows in tasks.items():
        lines = [json.dumps({"qry": q, "qry_image_path": f"{task}/img-{i}.jpg", "pos_text": p,
                             "pos_image_path": "", "neg_text": "", "neg_image_path": ""}, ensure_ascii=False)
                 for i, (q, p) in enumerate(rows)]
        write(os.path.join(HERE, "mmeb-train", task, "original.jsonl"), "\n".join(lines) + "\n")


def mmmeb_sources() -> None:
    keys = list(SCENES)
    xm = [json.dumps({"image/key": k, "image/locale": "en",
                      **{lang: {"caption": [SCENES[k][i], SCENES[k][i] + " (2)"]} for i, lang in enumerate(LANGS)},
                      "ja": {"caption": ["写真"]}}, ensure_ascii=False) for k in keys]
    write(os.path.join(HERE, "xm3600", "captions.jsonl"), "\n".join(xm) + "\n")
    for n, key in enumerate(keys):
        jpeg(os.path.join(HERE, "xm3600", "images", f"{key}.jpg"), n)
    xtd10()
    questions = {"en": [("a1", "What colour is the bicycle?", "red"), ("b2", "How many children are there?", "two"),
                        ("c3", "What is in the bowl?", "rice")],
                 "fr": [("a1", "De quelle couleur est le vélo ?", "rouge"), ("d4", "Où est le bateau ?", "sur la plage")]}
    for lang, qs in questions.items():
        write(os.path.join(HERE, "maxm", f"{lang}.json"), json.dumps({
            "dataset": "maxm", "version": "v1", "split": lang, "annotations": [
                {"image_id": k, "image_url": f"https://example.org/{k}.jpg", "qa_pairs": [
                    {"question_id": f"{k}-{lang}-{n}", "question": q, "answers": [a], "processed_answers": [a],
                     "is_collection": False}]} for n, (k, q, a) in enumerate(qs)]}, ensure_ascii=False, indent=1) + "\n")
    flickr = {"1000092795": ["[/EN#1/people Two young guys] with shaggy hair look at [/EN#2/bodyparts their hands] "
                             "while hanging out in [/EN#3/scene the yard] ."],
              "10002456": ["[/EN#4/people Several men] in [/EN#5/clothing hard hats] are operating "
                           "[/EN#6/other a giant pulley system] ."]}
    boxes = {"1": [(2, 2, 14, 28), (16, 2, 30, 28)], "2": [(8, 16, 24, 24)], "4": [(0, 0, 20, 30)],
             "5": [(2, 0, 18, 8)], "6": [(10, 10, 31, 31)]}  # entity 3 is a scene: no box
    write(os.path.join(HERE, "flickr30k_entities", "test.txt"), "\n".join(flickr) + "\n")
    for n, (image, sentences) in enumerate(flickr.items()):
        write(os.path.join(HERE, "flickr30k_entities", "Sentences", f"{image}.txt"), "\n".join(sentences) + "\n")
        objects = "".join(f"<object><name>{e}</name><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax>"
                          f"<ymax>{b[3]}</ymax></bndbox></object>" for e, bs in boxes.items()
                          for b in bs if f"#{e}/" in sentences[0])
        write(os.path.join(HERE, "flickr30k_entities", "Annotations", f"{image}.xml"),
              f"<annotation><filename>{image}.jpg</filename>{objects}</annotation>\n")
        jpeg(os.path.join(HERE, "flickr30k_entities", "images", f"{image}.jpg"), n + 20)
    imagenet()


def xtd10() -> None:
    """The repository's tree: XTD10/ (image list; en, and es and it CRLF with no final newline as the
    crowd-sourced files are), MIC/ (de, fr), STAIR/ (jp); images where MSCOCO 2014 keeps them."""
    names = [f"COCO_train2014_{n:012d}.jpg" for n in range(3)] + ["COCO_val2014_000000000003.jpg"]
    write(os.path.join(HERE, "xtd10", "XTD10", "test_image_names.txt"), "\n".join(names) + "\n")
    folders = {"en": "XTD10", "es": "XTD10", "it": "XTD10", "de": "MIC", "fr": "MIC"}
    for i, lang in enumerate(LANGS):
        lines = [SCENES[k][i].lower() if lang == "en" else SCENES[k][i] for k in SCENES]
        text = "\r\n".join(lines) if lang in ("es", "it") else "\n".join(lines) + "\n"
        write(os.path.join(HERE, "xtd10", folders[lang], f"test_1kcaptions_{lang}.txt"), text)
    write(os.path.join(HERE, "xtd10", "STAIR", "test_1kcaptions_jp.txt"),
          "壁のそばに赤い自転車がある\n二人の子供がサッカーをしている\nテーブルの上にご飯の入ったお椀がある\n浜辺に漁船がある\n")
    for n, name in enumerate(names):
        jpeg(os.path.join(HERE, "xtd10", "images", name.split("_")[1], name), n + 10)


def imagenet() -> None:
    """Babel-ImageNet's keys upper case as published, EN its BabelNet lemmas; IT lacks class 3 (refused there)."""
    synsets = [("n01440764", "tench"), ("n01443537", "goldfish"), ("n01484850", "great white shark"),
               ("n01491361", "tiger shark")]
    names = {"EN": ["Tinca tinca", "goldfish", "man-eating shark", "tiger shark"],
             "DE": ["Schleie", "Goldfisch", "Weißer Hai", "Tigerhai"],
             "FR": ["tanche", "poisson rouge", "grand requin blanc", "requin-tigre"],
             "IT": ["Tinche", "pesce rosso", "pescecane"],
             "ES": ["tenca", "pez de colores", "gran tiburón blanco", "tiburón tigre"]}
    write(os.path.join(HERE, "imagenet", "LOC_synset_mapping.txt"), "".join(f"{s} {n}\n" for s, n in synsets))
    val = [(f"ILSVRC2012_val_0000000{n + 1}", synsets[n % 4][0]) for n in range(6)]
    write(os.path.join(HERE, "imagenet", "LOC_val_solution.csv"), "ImageId,PredictionString\n" + "".join(
        f"{i},{s} 1 1 30 30\n" for i, s in val))
    write(os.path.join(HERE, "imagenet", "babel_imagenet.json"),
          json.dumps({lang: [list(range(len(n))), n] for lang, n in names.items()}, ensure_ascii=False) + "\n")
    for n, (image, _) in enumerate(val):
        jpeg(os.path.join(HERE, "imagenet", "images", f"{image}.JPEG"), n + 30)


def flickr8k() -> None:
    """Flickr8K-Expert: two images, their captions, three expert ratings per judged pair; as in the real
    file, some pairs judge the image's own caption (CLIPScore's evaluation leaves those out)."""
    tokens = {"111_a.jpg": ["A dog runs on the grass .", "A brown dog running outside ."],
              "222_b.jpg": ["A girl climbs a tree .", "A child in a tree ."]}
    write(os.path.join(HERE, "flickr8k", "Flickr8k.token.txt"),
          "".join(f"{img}#{n}\t{t}\n" for img, ts in tokens.items() for n, t in enumerate(ts)))
    write(os.path.join(HERE, "flickr8k", "ExpertAnnotations.txt"),
          "111_a.jpg\t111_a.jpg#0\t4\t4\t3\n111_a.jpg\t222_b.jpg#1\t1\t1\t2\n"
          "222_b.jpg\t222_b.jpg#0\t4\t3\t4\n222_b.jpg\t111_a.jpg#1\t1\t2\t1\n"
          "111_a.jpg\t222_b.jpg#0\t2\t1\t1\n222_b.jpg\t111_a.jpg#0\t1\t1\t1\n")
    for n, image in enumerate(tokens):
        jpeg(os.path.join(HERE, "flickr8k", "images", image), n + 40)


def vicr() -> None:
    """VICR: one ratings CSV as published (image URL, caption, subset, num_ratings, then the rating cells,
    empty past num_ratings), COCO val2014 and Flickr8k images in their archives' folders; each image with a
    caption that fits it (rated high) and one that does not (rated low), split by image."""
    scenes = ["A red bicycle by a wall", "Two children playing football", "A bowl of rice on a table",
              "A fishing boat on the beach", "A dog runs on the grass", "A girl climbs a tree",
              "A man rides a horse", "A cat sleeps on a sofa"]
    images = [("coco", f"COCO_val2014_{n + 1:012d}.jpg") for n in range(6)] + \
             [("flickr8k", name) for name in ("1000268201_693b08cb0e.jpg", "1001773457_577c3a7d70.jpg")]
    splits = ["train", "train", "train", "train", "val", "test", "train", "test"]
    lines = ["image,caption,subset,num_ratings,ratings,rating_2,rating_3,rating_4,rating_5"]
    for n, ((corpus, name), split) in enumerate(zip(images, splits)):
        url = (f"http://images.cocodataset.org/val2014/{name}" if corpus == "coco"
               else f"https://validatedicr.org/images/{name}")
        fits, other = scenes[n], scenes[(n + 3) % len(scenes)]
        lines.append(f"{url},{fits},{split},3,{5 - n % 2},4,5,,")
        lines.append(f"{url},{other},{split},4,1,{1 + n % 3},2,1,")
        jpeg(os.path.join(HERE, "vicr", "images", "val2014" if corpus == "coco" else "Flicker8k_Dataset", name),
             n + 70)
    write(os.path.join(HERE, "vicr", "vicr.csv"), "\n".join(lines) + "\n")


def valse_and_xvnli() -> None:
    """VALSE: two counting pieces whose keys repeat across files, as the published ones do (caption vs
    foil; one instance not validated). XVNLI: French and German hypotheses of one image, and beside
    them, as IGLUE ships it, the French set machine-translated into English (translate-test)."""
    texts = [("There are two dogs.", "There are five dogs."), ("A man holds one cup.", "A man holds three cups.")]
    for piece, votes in (("counting-hard", (3, 2)), ("counting-small-quant", (3, 1))):
        valse = {f"counting_visual7w_{n}": {
            "dataset": "visual7w", "original_split": "test", "dataset_idx": str(n), "linguistic_phenomena": "counting",
            "image_file": f"v7w_{n}.jpg", "caption": c, "classes": 2, "classes_foil": 5, "foil": f,
            "mturk": {"foil": 3 - v, "caption": v, "other": 0}} for n, ((c, f), v) in enumerate(zip(texts, votes))}
        write(os.path.join(HERE, "valse", f"{piece}.json"), json.dumps(valse, indent=4) + "\n")
    for n in range(2):
        jpeg(os.path.join(HERE, "valse", "images", "visual7w", f"v7w_{n}.jpg"), n + 50)
    hypotheses = {"fr": ["Un homme est debout.", "Il n'y a personne.", "Un homme mange."],
                  "de": ["Ein Mann steht.", "Niemand ist da.", "Ein Mann isst."]}
    for lang, texts in hypotheses.items():
        lines = [json.dumps({"gold_label": label, "sentence1": "", "sentence2": text, "captionID": "c0",
                             "pairID": f"p{lang}{i}", "Flikr30kID": "4452450137"}, ensure_ascii=False)
                 for i, (text, label) in enumerate(zip(texts, ("entailment", "contradiction", "neutral")))]
        write(os.path.join(HERE, "xvnli", "annotations", lang, "test.jsonl"), "\n".join(lines) + "\n")
    english = ["A man is standing.", "There is nobody.", "A man is eating."]
    lines = [json.dumps({"gold_label": label, "sentence1": "", "sentence2": text, "captionID": "c0",
                         "pairID": f"pfr{i}", "Flikr30kID": "4452450137"})
             for i, (text, label) in enumerate(zip(english, ("entailment", "contradiction", "neutral")))]
    write(os.path.join(HERE, "xvnli", "annotations_machine-translate", "fr", "test.jsonl"), "\n".join(lines) + "\n")
    jpeg(os.path.join(HERE, "xvnli", "images", "4452450137.jpg"), 60)


if __name__ == "__main__":
    valse_and_xvnli()
    openimages()
    mmeb_train()
    mmmeb_sources()
    flickr8k()
    vicr()
