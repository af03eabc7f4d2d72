"""Reading a running lab: routing state from FRR and the kernel, interface counters."""
