"""Writes the demo's sample data (deterministic): images.csv, images/*.png and captions.jsonl.

Run `python data/sample/make_sample.py` to regenerate; the same seed gives the same files.
Everything here is generated: no photo, caption or place comes from elsewhere.
"""
import csv
import json
import os
import random

from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
# (latitude, longitude, spread in degrees, weight): dense cities, sparse countryside, like real photos.
CLUSTERS = [(48.86, 2.35, 0.3, 30), (23.81, 90.41, 0.4, 25), (22.57, 88.36, 0.4, 20),
            (17.39, 78.49, 0.5, 20), (35.68, 139.69, 0.4, 25), (-12.05, -77.04, 0.5, 15),
            (-1.29, 36.82, 0.6, 15), (-23.55, -46.63, 0.5, 20), (52.52, 13.40, 0.4, 20),
            (41.01, 28.98, 0.4, 15), (55.76, 37.62, 0.5, 15), (-36.85, 174.76, 0.5, 10),
            (39.90, 116.40, 0.6, 20), (30.04, 31.24, 0.4, 15), (40.42, -3.70, 0.4, 15),
            (0.0, 20.0, 15.0, 10)]
CAPTIONS = [
    ("en", "A red bicycle leans against a wall on a quiet street."),
    ("en", "Two children play football in a park at sunset."),
    ("en", "A bowl of rice with vegetables on a wooden table."),
    ("en", "An old fishing boat rests on the sandy beach."),
    ("en", "A crowded market with fruit stalls under colourful umbrellas."),
    ("en", "A dog sleeps on the steps of a blue house."),
    ("en", "Snow covers the roofs of a small mountain village."),
    ("en", "A woman sells flowers at the corner of the square."),
    ("fr", "Un vélo rouge est appuyé contre un mur dans une rue calme."),
    ("fr", "Deux enfants jouent au football dans un parc au coucher du soleil."),
    ("de", "Ein alter Fischkutter liegt am Sandstrand."),
    ("de", "Ein Hund schläft auf den Stufen eines blauen Hauses."),
    ("es", "Un mercado lleno de gente con puestos de fruta bajo sombrillas de colores."),
    ("es", "Una mujer vende flores en la esquina de la plaza."),
    ("it", "La neve copre i tetti di un piccolo villaggio di montagna."),
    ("pt", "Uma tigela de arroz com legumes sobre uma mesa de madeira."),
    ("ru", "Старая рыбацкая лодка стоит на песчаном пляже."),
    ("zh", "一辆红色自行车靠在安静街道的墙上。"),
    ("ja", "夕暮れの公園で二人の子供がサッカーをしている。"),
    ("ar", "كلب ينام على درجات منزل أزرق."),
    ("hi", "एक महिला चौक के कोने पर फूल बेचती है।"),
    ("bn", "একটি লাল সাইকেল শান্ত রাস্তায় দেয়ালে হেলান দিয়ে আছে।"),
    ("te", "ఇద్దరు పిల్లలు సూర్యాస్తమయ సమయంలో పార్కులో ఫుట్‌బాల్ ఆడుతున్నారు."),
    ("sw", "Mbwa analala kwenye ngazi za nyumba ya bluu."),
    ("fi", "Lumi peittää pienen vuoristokylän katot."),
    ("tr", "Renkli şemsiyeler altında meyve tezgahlarıyla dolu bir pazar."),
    ("ko", "파란 집 계단에서 개 한 마리가 자고 있다."),
    ("th", "ชามข้าวกับผักวางอยู่บนโต๊ะไม้"),
    ("he", "סירת דייגים ישנה מונחת על חוף החול."),
    ("fa", "یک زن در گوشه میدان گل می‌فروشد."),
    ("vi", "Hai đứa trẻ chơi bóng đá trong công viên lúc hoàng hôn."),
    ("id", "Sebuah sepeda merah bersandar di dinding di jalan yang sepi."),
    ("el", "Ένας σκύλος κοιμάται στα σκαλιά ενός μπλε σπιτιού."),
    ("uk", "Сніг вкриває дахи маленького гірського села."),
    ("pl", "Kobieta sprzedaje kwiaty na rogu placu."),
    ("nl", "Een rode fiets staat tegen een muur in een rustige straat."),
    # Hard but valid text: newline, tab, emoji, RTL mixed with digits, a control character.
    ("en", "A cat on a sofa,\nlooking out of the window."),
    ("en", "Three\tboats in the harbour 🚤 at dawn."),
    ("ar", "٣ قطط تجلس على السور\u200f عند الغروب."),
    ("en", "A kite\x07 flying above the beach."),
]


def write_images(rng: random.Random, n: int = 300) -> None:
    os.makedirs(os.path.join(HERE, "images"), exist_ok=True)
    weights = [c[3] for c in CLUSTERS]
    with open(os.path.join(HERE, "images.csv"), "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["id", "latitude", "longitude", "path", "license"])
        for i in range(n):
            lat, lon, spread, _ = rng.choices(CLUSTERS, weights)[0]
            point = (round(lat + rng.gauss(0, spread), 5), round(lon + rng.gauss(0, spread), 5))
            path = f"images/img-{i:04d}.png"
            draw_image(rng, os.path.join(HERE, path))
            out.writerow([f"img-{i:04d}", *point, path, "CC0-1.0 (generated)"])
        # Rows a geo stage must refuse: no GPS, out of range.
        out.writerows([["img-bad-nogps", "", "", "", "CC0-1.0"], ["img-bad-range", "123.0", "10.0", "", "CC0-1.0"]])


def draw_image(rng: random.Random, path: str) -> None:
    image = Image.new("RGB", (32, 32), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(3):
        x, y = rng.randrange(24), rng.randrange(24)
        draw.ellipse([x, y, x + 8, y + 8], fill=tuple(rng.randrange(256) for _ in range(3)))
    image.save(path, optimize=True)


def write_captions(rng: random.Random) -> None:
    rows = [{"id": f"cap-{i:03d}", "text": text, "language": lang, "image_id": f"img-{rng.randrange(300):04d}"}
            for i, (lang, text) in enumerate(CAPTIONS)]
    rows += [{"id": "", "text": "A caption without an id.", "language": "en", "image_id": "img-0001"},
             {"id": "cap-000", "text": "A second row reusing an id.", "language": "en", "image_id": "img-0002"},
             {"id": "cap-empty", "text": "   ", "language": "en", "image_id": "img-0003"}]
    with open(os.path.join(HERE, "captions.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


if __name__ == "__main__":
    rng = random.Random(0)
    write_images(rng)
    write_captions(rng)
