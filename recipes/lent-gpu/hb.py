import sys
from hamburger.cli import main
sys.exit(main())
