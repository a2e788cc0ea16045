"""Problem instances with known answers and their classical baselines, one module per problem: the
travelling salesman (city sets, NumPy 2-opt and or-opt), the 0/1 knapsack (dynamic programming) and
continuous test functions. They are what a GA's results are read against."""
