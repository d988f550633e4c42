"""What `explain` says of an llm translator's work on one text: the prompt exactly as the model read it
(the run's template in the checkpoint's chat template, per target; its tokenizer is read, no weights)
and the raw replies the reply rules refused, with their reasons (tasks/translation/llm_replies.py);
kept replies show as their cleaned candidates."""
from __future__ import annotations

from xmdata.tasks.translation.llm_replies import REASONS


def llm_values(models: list[dict] | None, refused: list[dict], source_text: str | None, source: str,
               targets: list[str]) -> dict:
    specs = [m for m in models or [] if isinstance(m, dict) and m.get("backend") == "llm" and m.get("name_or_path")]
    if not specs:
        return {}
    from xmdata.models.base import ModelError, ModelSpec
    from xmdata.models.llm import LlmTranslator

    said: dict = {}
    for spec in specs:
        model = LlmTranslator(ModelSpec(**{k: spec[k] for k in ModelSpec.__dataclass_fields__ if k in spec}))
        try:
            model.load_tokenizer()
            prompts = {t: model.prompt_text(source_text or "", source, t) for t in targets}
        except (ModelError, ValueError) as exc:  # the checkpoint moved since the build: say so, explain the rest
            prompts = f"not shown: {exc}"
        said["prompt" if len(specs) == 1 else f"prompt ({spec['name_or_path']})"] = prompts
    replies = [f"{r['reason']}: {r['value']}" for r in refused if r.get("reason") in REASONS and "reply " in str(r.get("value"))]
    if replies:
        said["replies refused"] = replies
    return said
