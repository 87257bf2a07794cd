"""A faithful local emulator of the Media Asset Service, independent of the client side.

>>> from mediaframe.emulator import Emulator
>>> with Emulator(records=500, seed=0) as emu:  # doctest: +SKIP
...     print(emu.base_url, emu.token)
"""

from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.service import Emulator

__all__ = ["Catalogue", "Emulator"]
