from harn_ls.cli import main

raise SystemExit(main())
