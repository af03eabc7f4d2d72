"""A fabric reached over SSH: its inventory read, its nodes asked by kind, seen as a lab (RemoteView)."""
