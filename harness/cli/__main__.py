"""`python -m harness.cli`: the fablab command."""
import sys

from harness.cli.main import main

sys.exit(main())
