from .frontends.cli.launch import main

main()
