"""The claims fablab proves on a running lab. Each check returns a typed result that
carries its figures and says, when it fails, why."""
