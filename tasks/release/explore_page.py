"""The explore page itself: one HTML file, its CSS and JS inline (no CDN: clusters are often offline).
It loads data.js (the tables) with a <script> tag, which file:// allows where fetch() does not."""
from __future__ import annotations

import html


def page_html(name: str, embedded_images: bool = False) -> str:
    """The page; EMBEDDED_IMAGES: a release with its images inside, whose thumbnails come from images.js
    (the embedded bytes) rather than an image folder. Without them the page is byte for byte as before."""
    page = PAGE.replace("__TITLE__", html.escape(name))
    if embedded_images:
        page = page.replace('<script src="data.js"></script>', '<script src="images.js"></script>\n<script src="data.js"></script>')
        page = page.replace("\ninit();\n</script>", "\n" + EMBEDDED_THUMB + "init();\n</script>")
    return page


# A row's picture from the release's own bytes (window.XM_IMAGES: path -> data: URL); else as before.
EMBEDDED_THUMB = """const EMBEDDED = window.XM_IMAGES || {}, folderThumb = thumb;
thumb = (path, cls) => EMBEDDED[path] ? `<img class="${cls}" loading="lazy" src="${EMBEDDED[path]}" alt="${esc(path)}">` : folderThumb(path, cls);
"""


PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__ · explore</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{padding:8px 16px;background:#24323f;color:#fff}header h1{font-size:18px;margin:0;display:inline}
header span{margin-left:12px;opacity:.8}
nav{padding:6px 16px;border-bottom:1px solid #ccc}nav button{margin-right:4px}nav button.on{font-weight:bold}
#filters{padding:6px 16px;display:flex;flex-wrap:wrap;gap:10px;align-items:center;background:#f4f6f8}
#filters label{white-space:nowrap}#filters input[type=number]{width:70px}
#main{display:flex;gap:12px;padding:8px 16px}#main [dir=auto]{overflow-wrap:anywhere}.scroll{overflow-x:auto}#main th,#main .num{overflow-wrap:normal;white-space:nowrap}#list{flex:3;min-width:0}
#detail{flex:2;min-width:0;border-left:1px solid #ccc;padding-left:12px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;vertical-align:top}
tbody tr{cursor:pointer}tbody tr:hover{background:#eef4fb}th{background:#fafafa}
.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}.bad{color:#a01}.ok{color:#070}
img.thumb{max-width:64px;max-height:64px}img.big{max-width:100%;max-height:320px}
.noimg{font-size:12px;color:#777}svg.map{width:100%;background:#eaf2fa;border:1px solid #ccd}
svg.map circle{cursor:pointer}code{background:#f2f2f2;padding:1px 4px}
.chosen{background:#e6f6e6}table.cands{font-size:12px}blockquote{margin:6px 0 6px 12px}
</style></head>
<body>
<header><h1>__TITLE__</h1><span id="summary"></span></header>
<nav><button data-tab="images">Images</button><button data-tab="texts">Captions &amp; translations</button><button data-tab="rejects">Rejects</button><button data-tab="matches">Duplicates &amp; overlap</button></nav>
<div id="filters">
<label>language <select id="f-lang"><option value="">all</option></select></label>
<label>stage <select id="f-stage"><option value="">all</option><option value="kept">kept</option></select></label>
<label>reason <select id="f-reason"><option value="">all</option></select></label>
<label>score <select id="f-kind"><option value="clip">CLIPScore</option><option value="qe">QE</option></select>
 from <input id="f-min" type="number" step="any"> to <input id="f-max" type="number" step="any"></label>
<label>text <input id="f-q" type="search" placeholder="id or words"></label>
<label title="the folder the images' paths are relative to (the scoring stage's image folder); kept in this browser">image folder <input id="f-images" size="28" placeholder="e.g. file:///data/xm3600/"></label>
</div>
<div id="main"><div id="list"><div id="map"></div><div id="groups"></div><p id="count"></p>
<table id="rows"><thead></thead><tbody></tbody></table>
<p id="pager"><button id="prev">&lt; previous</button> <span id="page"></span> <button id="next">next &gt;</button></p></div>
<aside id="detail"><p class="muted">Pick a row to see where it came from.</p></aside></div>
<script src="data.js"></script>
<script>
"use strict";
const PAGE = 100, RAW = window.XM_DATA;
const $ = s => document.querySelector(s);
const esc = v => v == null ? "" : String(v).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"})[c]);
const num = v => v == null ? "" : (+v).toFixed(3);
function decode(t) {
  const out = {rows: t.rows};
  for (const k in t) if (k !== "rows") { const c = t[k]; out[k] = c && c.codes ? c.codes.map(i => i < 0 ? null : c.values[i]) : c; }
  return out;
}
const I = decode(RAW.images), T = decode(RAW.texts), R = decode(RAW.rejects), M = decode(RAW.matches || {rows: 0});
for (let i = 0; i < T.rows; i++) if (T.id[i] === "") T.id[i] = T.id[T.source[i]] + "@" + T.language[i];
const range = n => Array.from({length: n}, (_, i) => i);
const group = (n, key) => { const m = new Map(); for (let i = 0; i < n; i++) { const k = key(i); if (k == null) continue; if (!m.has(k)) m.set(k, []); m.get(k).push(i); } return m; };
const textById = new Map(range(T.rows).map(i => [T.id[i], i])), imageById = new Map(range(I.rows).map(i => [I.image_id[i], i]));
const rejectsById = group(R.rows, i => R.row_id[i]), textsByImage = group(T.rows, i => T.image[i] >= 0 ? T.image[i] : null), textsBySource = group(T.rows, i => T.source[i] >= 0 ? T.source[i] : null);
const sourceId = i => T.source[i] >= 0 ? T.id[T.source[i]] : T.source_id ? T.source_id[i] : null;
const selected = range(I.rows).map(i => (I.selected[i] || "").split(" ").filter(Boolean).map(s => s.split(":")));
const imageClip = range(I.rows).map(i => { const s = (textsByImage.get(i) || []).map(t => T.clip_score[t]).filter(v => v != null); return s.length ? s.reduce((a, b) => a + b, 0) / s.length : null; });
const rejectLang = range(R.rows).map(i => { const t = textById.get(R.row_id[i]); if (t != null) return T.language[t]; const m = /->\s*([A-Za-z0-9_-]+)/.exec(R.value[i] || ""); return m ? m[1] : null; });
const stagesOf = id => (rejectsById.get(id) || []).map(r => [R.stage[r], R.reason[r]]);
let tab = "images", pageNo = 0, shown = [], imageRoot = "";
const F = {};
function readFilters() {
  F.lang = $("#f-lang").value; F.stage = $("#f-stage").value; F.reason = $("#f-reason").value; F.kind = $("#f-kind").value;
  F.min = $("#f-min").value === "" ? null : +$("#f-min").value; F.max = $("#f-max").value === "" ? null : +$("#f-max").value;
  F.q = $("#f-q").value.trim().toLowerCase();
}
const inRange = v => (F.min == null && F.max == null) || (v != null && (F.min == null || v >= F.min) && (F.max == null || v <= F.max));
const stageMatch = (own, others, kept) => {
  const all = own ? [own, ...others] : others;
  if (F.stage === "kept" && !kept) return false;
  if (F.stage && F.stage !== "kept" && !all.some(([s]) => s === F.stage)) return false;
  return !F.reason || all.some(([s, r]) => r === F.reason && (!F.stage || F.stage === "kept" || s === F.stage));
};
const TABS = {
  images: {
    n: () => I.rows, head: ["image", "id", "place", "selected for (level)", "captions", "CLIPScore"],
    match: i => (!F.lang || selected[i].some(([l]) => l === F.lang) || (textsByImage.get(i) || []).some(t => T.language[t] === F.lang))
      && stageMatch(null, stagesOf(I.image_id[i]), selected[i].length > 0) && inRange(F.kind === "clip" ? imageClip[i] : null)
      && (!F.q || I.image_id[i].toLowerCase().includes(F.q) || (I.country[i] || "").toLowerCase().includes(F.q)),
    cells: i => [thumb(I.path[i], "thumb"), esc(I.image_id[i]), place(i), esc(selected[i].map(s => s.join(" ")).slice(0, 6).join(", ") + (selected[i].length > 6 ? ` … +${selected[i].length - 6}` : "")),
      `<span class="num">${(textsByImage.get(i) || []).length}</span>`, `<span class="num">${num(imageClip[i])}</span>`],
    key: i => "image/" + encodeURIComponent(I.image_id[i]),
  },
  texts: {
    n: () => T.rows, head: ["id", "lang", "kind", "text", "outcome", "CLIPScore", "QE"],
    match: i => (!F.lang || T.language[i] === F.lang) && stageMatch(T.stage[i] ? [T.stage[i], T.reason[i]] : null, stagesOf(T.id[i]), T.status[i] === "kept")
      && inRange(F.kind === "clip" ? T.clip_score[i] : T.qe_score[i]) && (!F.q || T.id[i].toLowerCase().includes(F.q) || (T.text[i] || "").toLowerCase().includes(F.q)),
    cells: i => [esc(T.id[i]), esc(T.language[i]), esc(T.kind[i]), `<span dir="auto">${esc((T.text[i] || "").slice(0, 140))}</span>`, outcome(i),
      `<span class="num">${num(T.clip_score[i])}</span>`, `<span class="num">${num(T.qe_score[i])}</span>`],
    key: i => "text/" + encodeURIComponent(T.id[i]),
  },
  rejects: {
    n: () => R.rows, head: ["stage", "reason", "row id", "value"],
    match: i => (!F.lang || rejectLang[i] === F.lang) && (!F.stage || F.stage === R.stage[i]) && (!F.reason || F.reason === R.reason[i])
      && (!F.q || (R.row_id[i] || "").toLowerCase().includes(F.q) || (R.value[i] || "").toLowerCase().includes(F.q)),
    cells: i => [esc(R.stage[i]), esc(R.reason[i]), esc(R.row_id[i]), `<span dir="auto">${esc(R.value[i])}</span>`],
    key: i => "reject/" + i,
  },
  matches: {
    n: () => M.rows, head: ["check", "group", "row", "matches", "method", "score", "measure"],
    match: i => !F.q || [M.id[i], M.match_id[i], M.text[i], M.match_text[i]].some(v => (v || "").toLowerCase().includes(F.q)),
    cells: i => [esc(M.check[i] + " · " + M.table[i]), esc(M.group[i]), side(M.id[i], M.path[i], M.text[i]),
      side(M.match_id[i], M.match_path[i], M.match_text[i], M.match_source[i]), esc(M.method[i]),
      `<span class="num">${num(M.score[i])}</span>`, `<span class="num">${num(M.measure[i])}</span> <span class="muted">${esc(M.measure_unit[i])}</span>`],
    key: i => "match/" + i,
  },
};
function side(id, path, text, source) {
  const from = source && source !== "self" ? ` <span class="muted">in ${esc(source)}</span>` : "";
  return (path ? thumb(path, "thumb") + "<br>" : "") + `<b>${esc(id)}</b>${from}` + (text ? `<br><span dir="auto">${esc(text.slice(0, 140))}</span>` : "");
}
function matchDetail(i) {
  const pair = [[M.id[i], M.path[i], M.text[i], null], [M.match_id[i], M.match_path[i], M.match_text[i], M.match_source[i]]];
  return `<h2>${esc(M.check[i])} match</h2><table><tr><th>method</th><td>${esc(M.method[i])}</td></tr><tr><th>score</th><td>${num(M.score[i])}</td></tr><tr><th>measure</th><td>${num(M.measure[i])} ${esc(M.measure_unit[i])}</td></tr><tr><th>group</th><td>${esc(M.group[i])}</td></tr></table>`
    + pair.map(([id, path, text, source]) => `<h3>${esc(id)}${source && source !== "self" ? " (" + esc(source) + ")" : ""}</h3>` + (path ? thumb(path, "big") : "") + (text ? `<blockquote dir="auto">${esc(text)}</blockquote>` : "")).join("")
    + rejectList(M.id[i]) + explainLine(M.id[i]);
}
function outcome(i) { return T.status[i] === "kept" && !T.stage[i] ? '<span class="ok">kept</span>' : `<span class="bad">${esc(T.stage[i] || T.status[i])}: ${esc(T.reason[i])}</span>`; }
function place(i) { return I.latitude[i] == null ? '<span class="muted">no coordinates</span>' : `${esc(I.country[i] || "")} <span class="muted">${(+I.latitude[i]).toFixed(2)}, ${(+I.longitude[i]).toFixed(2)}</span>`; }
function thumb(path, cls) {
  if (!path) return '<span class="noimg">no local image path in this release</span>';
  if (!imageRoot) return `<span class="noimg" title="${esc(path)}">${esc(path)} (set the image folder)</span>`;
  return `<img class="${cls}" loading="lazy" src="${esc(imageRoot + encodeURI(path))}" alt="${esc(path)}">`;
}
const LEVEL = {region: "#1b7837", country: "#2166ac", continent: "#e08214", global: "#b2182b"};
function map(items, mark) {
  let g = "";
  for (let x = -180; x <= 180; x += 30) g += `<line x1="${x}" y1="-90" x2="${x}" y2="90"/>`;
  for (let y = -90; y <= 90; y += 30) g += `<line x1="-180" y1="${y}" x2="180" y2="${y}"/>`;
  let dots = "";
  for (const i of items) if (I.latitude[i] != null) {
    const lv = (selected[i].find(([l]) => !F.lang || l === F.lang) || [])[1];
    dots += `<circle data-i="${i}" cx="${(+I.longitude[i]).toFixed(2)}" cy="${(-I.latitude[i]).toFixed(2)}" r="${i === mark ? 3 : 1.3}" fill="${i === mark ? "#000" : LEVEL[lv] || "#555"}"><title>${esc(I.image_id[i])} ${esc(lv || "")}</title></circle>`;
  }
  return `<svg class="map" viewBox="-180 -90 360 180"><path d="${RAW.land || ""}" fill="#d8d3c4"/><g stroke="#c8d6e5" stroke-width=".3">${g}</g>${dots}</svg>`;
}
function render() {
  readFilters();
  const t = TABS[tab];
  shown = [];
  for (let i = 0, n = t.n(); i < n; i++) if (t.match(i)) shown.push(i);
  pageNo = Math.min(pageNo, Math.max(0, Math.ceil(shown.length / PAGE) - 1));
  $("#count").textContent = `${shown.length} of ${t.n()} rows`;
  $("#count").dataset.n = shown.length;
  $("#map").innerHTML = tab === "images" ? map(shown, -1) : "";
  $("#groups").innerHTML = tab === "rejects" ? rejectGroups() : "";
  $("#rows thead").innerHTML = "<tr>" + t.head.map(h => `<th>${h}</th>`).join("") + "</tr>";
  $("#rows tbody").innerHTML = shown.slice(pageNo * PAGE, (pageNo + 1) * PAGE).map(i => `<tr data-key="${esc(t.key(i))}"><td>${t.cells(i).join("</td><td>")}</td></tr>`).join("");
  $("#page").textContent = `page ${pageNo + 1} of ${Math.max(1, Math.ceil(shown.length / PAGE))}`;
  document.querySelectorAll("nav button").forEach(b => b.classList.toggle("on", b.dataset.tab === tab));
}
function rejectGroups() {
  const m = group(shown.length, k => R.stage[shown[k]] + "\u0000" + R.reason[shown[k]]);
  const rows = [...m.entries()].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1)).map(([k, ks]) => {
    const [s, r] = k.split("\u0000"), ex = ks.slice(0, 3).map(j => `<a href="#reject/${shown[j]}">${esc(R.row_id[shown[j]] || "(no id)")}</a>`).join(", ");
    return `<tr class="grp" data-stage="${esc(s)}" data-reason="${esc(r)}"><td>${esc(s)}</td><td>${esc(r)}</td><td class="num">${ks.length}</td><td>${ex}</td></tr>`;
  });
  return `<table><thead><tr><th>stage</th><th>reason</th><th>rows</th><th>examples</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}
const CAND = {};
window.XM_CANDIDATES = (lang, d) => { CAND[lang] = d; route(); };
function candidates(lang) {
  if (CAND[lang]) return CAND[lang];
  const file = RAW.candidate_languages[lang];
  if (file && !document.getElementById("cand-" + file)) {
    const s = document.createElement("script"); s.id = "cand-" + file; s.src = "candidates/" + file + ".js"; document.body.appendChild(s);
  }
  return null;
}
const explainLine = id => `<p>Its whole trace: <code>xmdata explain RELEASE ${esc(id)}</code></p>`;
function rejectList(id, filter) {
  const rs = (rejectsById.get(id) || []).filter(filter || (() => true));
  return rs.length ? "<h3>Rejects</h3><ul>" + rs.map(r => `<li><a href="#reject/${r}">${esc(R.stage[r])}: ${esc(R.reason[r])}</a> <span class="muted" dir="auto">${esc(R.value[r])}</span></li>`).join("") + "</ul>" : "";
}
function textLink(t) { return `<a href="#text/${encodeURIComponent(T.id[t])}">${esc(T.id[t])}</a>`; }
function textDetail(i) {
  const id = T.id[i], img = T.image[i] >= 0 ? T.image[i] : null;
  let h = `<h2>${esc(T.kind[i])} ${esc(id)}</h2><p>${esc(T.language[i])} · ${outcome(i)}</p><blockquote dir="auto">${esc(T.text[i] || "(no text)")}</blockquote>`;
  h += `<table><tr><th>language ID</th><td>${esc(T.lid_label[i])} ${num(T.lid_prob[i])}</td></tr><tr><th>CLIPScore</th><td>${num(T.clip_score[i])}</td></tr>` + (T.kind[i] === "translation" ? `<tr><th>QE</th><td>${num(T.qe_score[i])}</td></tr>` : "") + "</table>";
  if (img != null) h += `<h3>Image <a href="#image/${encodeURIComponent(I.image_id[img])}">${esc(I.image_id[img])}</a></h3>${thumb(I.path[img], "big")}`;
  if (T.kind[i] === "translation") {
    const src = T.source[i] >= 0 ? T.source[i] : null, c = candidates(T.language[i]);
    h += `<h3>Source</h3><p>${src != null ? textLink(src) : esc(sourceId(i))} <span dir="auto">${esc(src != null ? T.text[src] : c && c.source[id])}</span></p>`;
    h += `<h3>Decision</h3><p>${outcome(i)}</p><h3>Candidates</h3>`;
    if (!c) h += RAW.candidate_languages[T.language[i]] ? '<p class="muted">loading…</p>' : '<p class="muted">no candidates published</p>';
    else { const rows = c.units[id] || [], col = c.columns;
      h += `<div class="scroll"><table class="cands"><thead><tr>${col.map(x => `<th>${x}</th>`).join("")}</tr></thead><tbody>` + rows.map(r => `<tr class="${r[col.indexOf("candidate")] === T.text[i] ? "chosen" : ""}">${r.map(v => typeof v === "number" ? `<td class="num">${Number.isInteger(v) ? v : num(v)}</td>` : `<td dir="auto">${esc(v)}</td>`).join("")}</tr>`).join("") + "</tbody></table></div>" + (rows.length ? "" : '<p class="muted">none</p>'); }
    h += rejectList(sourceId(i), r => (R.value[r] || "").endsWith("-> " + T.language[i]));
  } else {
    const tr = textsBySource.get(i) || [];
    if (tr.length) h += "<h3>Translations</h3><ul>" + tr.map(t => `<li>${textLink(t)} ${outcome(t)} <span dir="auto">${esc(T.text[t] || "")}</span></li>`).join("") + "</ul>";
  }
  return h + rejectList(id) + explainLine(T.kind[i] === "translation" ? sourceId(i) : id);
}
function imageDetail(i) {
  const id = I.image_id[i], texts = textsByImage.get(i) || [];
  let h = `<h2>image ${esc(id)}</h2>${thumb(I.path[i], "big")}<p>${place(i)}</p>${map([i], i)}`;
  h += "<h3>Selected for</h3>" + (selected[i].length ? "<table><tr><th>language</th><th>level</th></tr>" + selected[i].map(([l, v]) => `<tr><td>${esc(l)}</td><td>${esc(v)}</td></tr>`).join("") + "</table>" : '<p class="muted">no language</p>');
  const byLang = group(texts.length, k => T.language[texts[k]]);
  h += "<h3>Captions and translations</h3>" + [...byLang.keys()].sort().map(l => `<h4>${esc(l)}</h4><ul>` + byLang.get(l).map(k => texts[k]).map(t => `<li>${textLink(t)} ${outcome(t)} <span class="num">${num(T.clip_score[t])}</span> <span dir="auto">${esc(T.text[t] || "")}</span></li>`).join("") + "</ul>").join("");
  return h + rejectList(id) + explainLine(id);
}
function rejectDetail(r) {
  const id = R.row_id[r], t = textById.get(id), img = imageById.get(id);
  return `<h2>reject</h2><table><tr><th>stage</th><td>${esc(R.stage[r])}</td></tr><tr><th>reason</th><td>${esc(R.reason[r])}</td></tr><tr><th>row id</th><td>${esc(id)}</td></tr><tr><th>value</th><td dir="auto">${esc(R.value[r])}</td></tr></table>`
    + (t != null ? `<p>The row: ${textLink(t)}</p>` : "") + (img != null ? `<p>The image: <a href="#image/${encodeURIComponent(id)}">${esc(id)}</a></p>` : "") + (id ? rejectList(id, x => x !== r) + explainLine(id) : "");
}
function route() {
  const m = /^#(image|text|reject|match)\/(.*)$/.exec(location.hash), d = $("#detail");
  if (!m) return;
  const key = decodeURIComponent(m[2]);
  const i = m[1] === "image" ? imageById.get(key) : m[1] === "text" ? textById.get(key) : m[1] === "match" ? (+key < M.rows ? +key : undefined) : (+key < R.rows ? +key : undefined);
  d.innerHTML = i == null ? `<p class="bad">${esc(key)}: not in this release</p>` : m[1] === "image" ? imageDetail(i) : m[1] === "text" ? textDetail(i) : m[1] === "match" ? matchDetail(i) : rejectDetail(i);
  d.dataset.key = m[1] + "/" + key;
}
function options(sel, values) { $(sel).insertAdjacentHTML("beforeend", values.map(v => `<option value="${esc(v)}">${esc(v)}</option>`).join("")); }
function init() {
  const langs = new Set([...T.language, ...selected.flat().map(p => p[0])].filter(Boolean));
  options("#f-lang", [...langs].sort()); options("#f-stage", [...new Set(R.stage.concat(T.stage))].filter(Boolean).sort());
  options("#f-reason", [...new Set(R.reason.concat(T.reason))].filter(Boolean).sort());
  $("#summary").textContent = `${I.rows} images · ${T.rows} captions and translations · ${langs.size} languages · ${R.rows} rejects` + (M.rows ? ` · ${M.rows} clean-check matches` : "");
  if (!M.rows) document.querySelector('nav button[data-tab="matches"]').hidden = true;
  imageRoot = new URLSearchParams(location.search).get("images") || localStorage.getItem("xmdata-explore-images") || "";
  if (imageRoot && !imageRoot.endsWith("/")) imageRoot += "/";
  $("#f-images").value = imageRoot;
  let timer = null;
  const again = () => { clearTimeout(timer); timer = setTimeout(() => { pageNo = 0; render(); }, 120); };
  document.querySelectorAll("#filters select, #filters input:not(#f-images)").forEach(e => e.addEventListener("input", again));
  $("#f-images").addEventListener("change", e => { imageRoot = e.target.value && !e.target.value.endsWith("/") ? e.target.value + "/" : e.target.value; localStorage.setItem("xmdata-explore-images", imageRoot); render(); route(); });
  document.querySelectorAll("nav button").forEach(b => b.addEventListener("click", () => { tab = b.dataset.tab; pageNo = 0; render(); }));
  $("#prev").addEventListener("click", () => { pageNo = Math.max(0, pageNo - 1); render(); });
  $("#next").addEventListener("click", () => { if ((pageNo + 1) * PAGE < shown.length) pageNo++; render(); });
  $("#rows tbody").addEventListener("click", e => { const tr = e.target.closest("tr"); if (tr) location.hash = tr.dataset.key; });
  $("#groups").addEventListener("click", e => { const tr = e.target.closest("tr.grp"); if (tr && !e.target.closest("a")) { $("#f-stage").value = tr.dataset.stage; $("#f-reason").value = tr.dataset.reason; render(); } });
  $("#map").addEventListener("click", e => { const c = e.target.closest("circle"); if (c) location.hash = "image/" + encodeURIComponent(I.image_id[+c.dataset.i]); });
  window.addEventListener("hashchange", route);
  render(); route();
  document.body.dataset.ready = "1";
}
init();
</script></body></html>
"""
