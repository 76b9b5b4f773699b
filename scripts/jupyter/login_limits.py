"""Failed-login limits for the workshop hub (read by workshop_config.py; no JupyterHub import).

A room's login page is reachable by anyone on its network, and the workshop code is one shared
secret: without a limit, a script tries thousands of codes a minute. :class:`FailedLogins`
counts failures per user name and per address over a sliding window; once either count reaches
its limit, every attempt for that name or from that address is refused (even with the right
code) until the oldest failure leaves the window. The hub also waits ``DELAY_S`` after each
failure, so one connection cannot try codes quickly.

How strong the code is: ``workshop.sh`` makes three groups of four characters from a
31-character alphabet, 31**12 (about 7.9e17) codes. At ``PER_ADDRESS`` failures per
``WINDOW_S`` from one address, finding it takes about 7.9e17 / 2 / 30 windows of 10 minutes on
average: longer than the universe is old. An attacker with many addresses is limited per name
too: ``PER_NAME`` failures per window for each learner name.
"""
from __future__ import annotations

import collections
import time

WINDOW_S = 600.0  # the window failures are counted over: 10 minutes
PER_NAME = 10  # failures for one user name within the window before it is locked
PER_ADDRESS = 30  # failures from one address (a room behind one router shares one)
DELAY_S = 1.0  # the hub waits this long before answering a failed attempt
ALPHABET = 31  # characters workshop.sh draws the code from
CODE_CHARACTERS = 12  # three groups of four


def guesses_on_average(alphabet: int = ALPHABET, characters: int = CODE_CHARACTERS) -> float:
    """How many codes an attacker tries, on average, before finding a random one."""
    return alphabet ** characters / 2


class FailedLogins:
    """Failures per name and per address in the last ``window_s`` seconds."""

    def __init__(self, per_name: int = PER_NAME, per_address: int = PER_ADDRESS,
                 window_s: float = WINDOW_S, clock=time.monotonic) -> None:
        if per_name < 1 or per_address < 1 or window_s <= 0:
            raise ValueError("limits must be positive")
        self.per_name, self.per_address, self.window_s = per_name, per_address, window_s
        self.clock = clock
        self._by_name: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._by_address: dict[str, collections.deque] = collections.defaultdict(collections.deque)

    def _recent(self, table: dict, key: str) -> collections.deque:
        times = table[key]
        cutoff = self.clock() - self.window_s
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del table[key]  # a name or address with no recent failure costs no memory
            return collections.deque()
        return times

    def blocked(self, name: str, address: str) -> bool:
        """True when ``name`` or ``address`` has used up its failures in the window."""
        return (len(self._recent(self._by_name, name)) >= self.per_name
                or len(self._recent(self._by_address, address)) >= self.per_address)

    def failed(self, name: str, address: str) -> None:
        """Record one failed attempt."""
        now = self.clock()
        self._by_name[name].append(now)
        self._by_address[address].append(now)

    def succeeded(self, name: str) -> None:
        """A right code for ``name`` forgives that name's earlier typos (not its address's)."""
        self._by_name.pop(name, None)
