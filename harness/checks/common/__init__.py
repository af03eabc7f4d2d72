"""What checks share, so that no check imports another (issue 69): `bounds.py`, how many QPs or
connections a spread verdict needs and the band a fair hash lands in (ecmp, ecmp-superspine,
fe-ecmp, rdma-path); `drops.py`, what a lossless incast's drops are judged on (pfc, dcqcn,
collectives-incast-congested)."""
