from bench.peers.runner import main

main()
