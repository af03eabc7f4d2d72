"""Where a GPU NIC cabled to another rail's leaf belongs: the leaf and the port to cable it to,
so that a plan's miscabling is named where it is fixed.

A NIC is *astray* when its rail (its node's BE NICs in name order) is not one its leaf carries
(infer.py decides both). It may have been moved to a spare port, swapped with another NIC, or
doubled up beside its node's NIC of the leaf's own rail; each is the same fix: this NIC to its
home port, which this module finds.

- **The leaf**: the rail-r leaf of the node's group, i.e. the one where the nodes sharing the
  node's other (rightly cabled) leaves have their rail-r NIC, by majority; failing those, the
  only leaf of rail r, else the one rail-r leaf with fewer rail-r NICs than the others (the one
  the NIC was taken from); else no leaf is named.
- **The port, by the pattern**: the ports of a leaf's rail-r NICs step evenly with their
  nodes' order (node k of the leaf on `Ethernet<base + k*step>`). The step is the one more
  than half the (leaf, rail) port groups of two nodes or more show; the base is the one most
  of the leaf's own rail-r NICs give (the lower on a tie). The node's place in the name order of the leaf's rail-r nodes
  and itself gives its port. That port is taken as the home if nothing else is cabled to it, or
  only another astray NIC (then the two are a swap).
- **The port, when the pattern cannot say** (no such step, the leaf has no rail-r NIC to
  give a base, or the pattern's port is cabled to a rightly placed NIC or an uplink): the
  first free port of rail r's port group on the leaf (else of its NICs' ports), counting from
  its lowest port by the step (else the gap most often between two ports of a group, else 1),
  a port the leaf's HwSKU has.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from harness.core.cabling.apply import natural
from harness.core.cabling.plan import End

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class Home:
    """Where an astray NIC belongs: its rail's leaf and, where it can be told, the port."""

    nic: End
    rail: int
    leaf: str | None
    port: str | None = None
    by_pattern: bool = False  # the port its group's pattern gives (else the first free one)
    taken_by: End | None = None  # an astray NIC on that port now: the two are a swap

    @property
    def end(self) -> End | None:
        return End(self.leaf, self.port) if self.leaf and self.port else None

    def hint(self) -> str:
        """What to do, as a Problem's hint."""
        if self.leaf is None:
            return f"cable {self.nic} to its rail {self.rail} leaf"
        if self.port is None:
            return f"move it to {self.leaf}, its group's rail {self.rail} leaf"
        if self.taken_by is not None:
            return (f"swap it with {self.taken_by}, now on {self.end}, where its group's port pattern puts "
                    f"{self.nic.device}'s rail {self.rail} NIC")
        if self.by_pattern:
            return f"move it to {self.end} (free), where its group's port pattern puts {self.nic.device}'s " \
                   f"rail {self.rail} NIC"
        return f"move it to {self.end} (free), the first free port of rail {self.rail}'s ports on {self.leaf}"


def _number(port: str) -> tuple[str, int] | None:
    m = _NUMBERED.match(port)
    return (m.group(1), int(m.group(2))) if m else None


def homes(nics: Iterable[tuple[End, End]], rail_of: dict[End, int], leaf_rails: dict[str, tuple[int, ...]],
          astray: Iterable[End], taken: dict[End, End], exists: Callable[[str, str], bool] = lambda leaf, port: True
          ) -> dict[End, Home]:
    """Each astray NIC's home. `nics`: every GPU BE cable (NIC end, leaf end); `taken`: every
    switch port a cable is on -> that cable's far end; `exists(leaf, port)`: whether the leaf
    has that port (its HwSKU's rows, True where unknown)."""
    return _Homes(list(nics), rail_of, leaf_rails, set(astray), taken, exists).run()


class _Homes:
    def __init__(self, nics: list[tuple[End, End]], rail_of: dict[End, int], leaf_rails: dict[str, tuple[int, ...]],
                 astray: set[End], taken: dict[End, End], exists: Callable[[str, str], bool]) -> None:
        self.nics, self.rail_of, self.leaf_rails = nics, rail_of, leaf_rails
        self.astray, self.taken, self.exists = astray, taken, exists
        self.of_node: dict[str, list[tuple[End, End]]] = defaultdict(list)
        # (leaf, rail) -> {node: port} of the NICs rightly there
        self.right: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
        for nic, sw in nics:
            self.of_node[nic.device].append((nic, sw))
            if nic not in astray:
                self.right[(sw.device, rail_of[nic])][nic.device] = sw.port
        self.step, self.gap = self._step()

    def run(self) -> dict[End, Home]:
        out = {}
        for nic, _ in sorted((x for x in self.nics if x[0] in self.astray), key=lambda x: natural(str(x[0]))):
            rail = self.rail_of[nic]
            leaf = self._leaf(nic, rail)
            out[nic] = self._port(nic, rail, leaf) if leaf else Home(nic, rail, None)
        return out

    def _step(self) -> tuple[int | None, int]:
        """The step more than half the (leaf, rail) port groups of two nodes or more show, their
        nodes in name order (else None: the plan's ports follow no pattern); and the gap most often between two ports of a group
        next to each other (the smaller on a tie; 1 where no group has two ports)."""
        steps: Counter[int] = Counter()
        gaps: Counter[int] = Counter()
        seen = 0
        for ports in self.right.values():
            nums = [_number(ports[n]) for n in sorted(ports, key=natural)]
            if len(nums) < 2 or None in nums or len({p for p, _ in nums}) > 1:
                continue
            seen += 1
            xs = sorted(x for _, x in nums)
            gaps.update(b - a for a, b in zip(xs, xs[1:]) if b > a)
            s = nums[1][1] - nums[0][1]
            if s and all(n - nums[0][1] == s * i for i, (_, n) in enumerate(nums)):
                steps[s] += 1
        step = sorted(steps, key=lambda s: (-steps[s], abs(s)))[0] if steps else None
        step = step if step is not None and 2 * steps[step] > seen else None  # most groups, or no pattern
        return step, sorted(gaps, key=lambda g: (-gaps[g], g))[0] if gaps else 1

    def _leaf(self, nic: End, rail: int) -> str | None:
        node = nic.device
        mine = [sw.device for n, sw in self.of_node[node] if n != nic and n not in self.astray] \
            or [sw.device for n, sw in self.of_node[node] if n != nic]
        peers = {p for (leaf, _), ports in self.right.items() if leaf in mine for p in ports} - {node}
        votes = Counter(leaf for (leaf, r), ports in self.right.items() if r == rail for p in ports if p in peers)
        if votes:
            return sorted(votes, key=lambda x: (-votes[x], natural(x)))[0]
        of_rail = sorted((leaf for leaf, rails in self.leaf_rails.items() if rail in rails), key=natural)
        if len(of_rail) == 1:
            return of_rail[0]
        count = {leaf: len(self.right.get((leaf, rail), {})) for leaf in of_rail}
        short = [leaf for leaf in of_rail if count[leaf] < max(count.values())]
        return short[0] if len(short) == 1 else None

    def _free_or_swap(self, leaf: str, port: str) -> tuple[bool, End | None]:
        """Whether the port can take the NIC, and the astray NIC on it now, if one is."""
        if not self.exists(leaf, port):
            return False, None
        far = self.taken.get(End(leaf, port))
        if far is None:
            return True, None
        return (True, far) if far in self.astray else (False, None)

    def _port(self, nic: End, rail: int, leaf: str) -> Home:
        ports = self.right.get((leaf, rail), {})
        nums = {n: x for n, p in ports.items() if (x := _number(p)) is not None}
        prefixes = {p for p, _ in nums.values()}
        if self.step and nums and len(prefixes) == 1:
            order = sorted({*nums, nic.device}, key=natural)
            bases = Counter(x - self.step * order.index(n) for n, (_, x) in nums.items())
            base = sorted(bases, key=lambda b: (-bases[b], b))[0]
            at = base + self.step * order.index(nic.device)
            if at >= 0:
                port = f"{next(iter(prefixes))}{at}"
                ok, swap = self._free_or_swap(leaf, port)
                if ok:
                    return Home(nic, rail, leaf, port, by_pattern=True, taken_by=swap)
        port = next(self._free(leaf, rail), None)
        return Home(nic, rail, leaf, port)

    def _free(self, leaf: str, rail: int) -> Iterator[str]:
        """Free ports of rail r's group on the leaf, from its lowest port on (else the lowest of the
        leaf's NIC ports)."""
        group = [x for p in self.right.get((leaf, rail), {}).values() if (x := _number(p)) is not None]
        if not group:
            group = [x for n, sw in self.nics if sw.device == leaf and (x := _number(sw.port)) is not None]
        if not group or len({p for p, _ in group}) > 1:
            return
        prefix, low = group[0][0], min(x for _, x in group)
        gap = abs(self.step) if self.step else self.gap
        for k in range(1024):
            port = f"{prefix}{low + k * gap}"
            if self.exists(leaf, port) and End(leaf, port) not in self.taken:
                yield port
