"""`Addressing.asns`/`loopbacks`/`ports`/`mgmt_ips` as written, whatever is written (issue 68: never
a traceback): an ASN of thousands of digits (Python refuses to print it) and an item that names
its device by something other than a name are problems of the field, said; a good item is none."""
from __future__ import annotations

from harness.core.declarations import Addressing
from harness.core.numbering import field_problems


def test_a_huge_asn_and_an_unnamed_device_are_said_not_raised():
    huge = 10 ** 5000
    found = [str(p) for p in field_problems(Addressing(asns=(("leaf1", huge), (7, 65001))))]
    assert len(found) == 2, found
    assert "leaf1's ASN a number of about 5001 digits is not 1.." in found[0]
    assert found[1].startswith("addressing.asns[1]: (7, 65001) is not 2 values")
    assert field_problems(Addressing(asns=(("leaf1", 65001),))) == []  # the control
