"""python -m resumable.local.permissions: the permission check (make predeploy runs it)."""

import sys

from resumable.local.permissions.check import main

sys.exit(main())
