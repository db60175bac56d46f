from butler_cli.cli.main import main

main()
