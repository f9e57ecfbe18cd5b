from chatetl.cli import main

main()
