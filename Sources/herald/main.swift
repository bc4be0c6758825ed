import HeraldCLI

HeraldCLI.main()
