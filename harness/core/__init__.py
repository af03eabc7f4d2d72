"""The pure core: declarations, validation, expansion, plan, addressing, tenancy, ACL compilation,
HwSKU tables. No I/O; imports nothing of fablab outside this package."""
