import sys
from hamburger.cli.main import main
sys.exit(main())
