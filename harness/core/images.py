"""The container images a render names by default (the clab file, clabernetes): constants a
`fablab render --help` shows without loading the renderer."""
from __future__ import annotations

SONIC_IMAGE = "docker-sonic-vs:latest"
HOST_IMAGE = "ghcr.io/srl-labs/network-multitool:latest"
# A dual-homed FE host runs FRR (BGP to both its leaves): the FRR project's image, the release
# the netns runtime runs from Debian; its docker-start runs watchfrr on the bound files.
ROUTED_HOST_IMAGE = "frrouting/frr:v8.4.1"
