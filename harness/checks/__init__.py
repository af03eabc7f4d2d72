"""The claims fablab proves on a running lab. Each check is a plug-in: one module exporting
`CHECK` (harness/checks/base.py), named in harness/checks/registry.py; its result is an
`Outcome` that carries its figures and says, when it fails, why (docs/adding-a-check.md)."""
