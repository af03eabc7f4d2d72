"""What any layer may use of the machine: waiting with a deadline, signals, network namespaces,
real-time scheduling, and LabView, the typed protocol of a running lab."""
