"""swarms' ``swarms.structs.conversation`` path: the module :mod:`nbmemory.memory.conversation`.

The same module object under a second name, so that code written for swarms that imports or
patches this path acts on nbmemory's conversation itself.
"""

import sys

from nbmemory.memory import conversation

sys.modules[__name__] = conversation
