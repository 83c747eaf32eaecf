from vbench.cli import main

main()
