"""Every `xmdata` command, in the order `xmdata --help` lists them: the one list `cli.py` assembles
the parser from. A command's module declares its flags and its runner together (cli_command.Command);
a new command is one module and one line here. Light: importing this imports no heavy library."""
from __future__ import annotations

from xmdata.commands.clean import CONTAMINATION, DEDUP
from xmdata.commands.download_images import DOWNLOAD_IMAGES
from xmdata.commands.evaluate import EVALUATE
from xmdata.commands.explain import EXPLAIN
from xmdata.commands.explore import EXPLORE
from xmdata.commands.identify_language import IDENTIFY_LANGUAGE
from xmdata.commands.import_dataset import IMPORT
from xmdata.commands.lock import UNLOCK
from xmdata.commands.memo import MEMO
from xmdata.commands.models import MODELS
from xmdata.commands.publish import PUBLISH
from xmdata.commands.release import DEMO, RELEASE
from xmdata.commands.score import SCORE
from xmdata.commands.select_images import SELECT_IMAGES
from xmdata.commands.service import DOWN, SERVE, STATUS, UP, WORKER
from xmdata.commands.train import TRAIN
from xmdata.commands.translate import SELECT_TRANSLATIONS, TRANSLATE, TRANSLATE_QA
from xmdata.commands.validate import VALIDATE

COMMANDS = (DEMO, RELEASE, PUBLISH, UP, DOWN, WORKER, STATUS, SERVE, IDENTIFY_LANGUAGE, SELECT_IMAGES, SCORE, TRANSLATE,
            SELECT_TRANSLATIONS, TRANSLATE_QA, DOWNLOAD_IMAGES, DEDUP, CONTAMINATION, EXPLAIN, EXPLORE, TRAIN, VALIDATE,
            MODELS, EVALUATE, IMPORT, MEMO, UNLOCK)
