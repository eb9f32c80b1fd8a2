import sys

from resumable.cli.main import main

sys.exit(main())
