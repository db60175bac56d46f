from butler_cli.cli.entry import main

main()
