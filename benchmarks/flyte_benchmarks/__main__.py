from benchmarks.flyte_benchmarks import main

main()
