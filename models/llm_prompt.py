"""An llm translator's prompt template, declared once: its default, its placeholders, the check that
refuses a template without {text} (or with a misspelt placeholder) and its rendering. Light (re only):
the params models (tasks/translation/llm_options.py) validate with it before anything loads."""
from __future__ import annotations

import re

# The default user turn: the languages by their English names (CLDR's, from babel), then the text.
DEFAULT_PROMPT = ("Translate the following {source} text into {target}. Reply with the {target} translation "
                  "only.\n\n{text}")
PLACEHOLDERS = ("text", "source", "target")  # {text}: the text; {source}, {target}: English language names
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def check_prompt(template: str) -> str:
    """The template, or a ValueError in one line: it must hold {text}, and no placeholder of another name
    (a misspelt `{txt}` would reach the model as it is)."""
    names = PLACEHOLDER.findall(template)
    if "text" not in names:
        raise ValueError(f"the template has no {{text}} placeholder, so the model would never see the text: "
                         f"{template!r}")
    if unknown := sorted(set(names) - set(PLACEHOLDERS)):
        raise ValueError(f"unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; a template may use "
                         f"{', '.join('{' + n + '}' for n in PLACEHOLDERS)}")
    return template


def render_prompt(template: str, text: str, source: str, target: str) -> str:
    """One pass over the template: a brace inside the text (or a language name) is never read as a placeholder."""
    values = {"text": text, "source": source, "target": target}
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
