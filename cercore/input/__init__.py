"""The input layer: every engine's events go through here.

    records | pandas | Arrow  ──decode──▶  Batch (columns; strings as dictionary codes)
                              ──tag────▶  stream ids      ──order──▶  time checked / reordered

``EventInput`` (``source``) is the front door; ``skips`` is the one taxonomy of bad input.
"""

from cercore.input.batch import SKIPPED, Batch, ReadFilter
from cercore.input.columns import Columns, StringColumn
from cercore.input.decode import REJECT_COLUMN, EventDecoder, Rejected
from cercore.input.order import ReorderBuffer, TimeOrder
from cercore.input.skips import SkipLog
from cercore.input.source import BATCH_SIZE, EventInput

__all__ = ["BATCH_SIZE", "REJECT_COLUMN", "SKIPPED", "Batch", "Columns", "EventDecoder",
           "EventInput", "ReadFilter", "Rejected", "ReorderBuffer", "SkipLog",
           "StringColumn", "TimeOrder"]
