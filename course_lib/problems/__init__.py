"""Problem instances with known answers and their classical baselines, one module per problem: the
travelling salesman (city sets, NumPy 2-opt and or-opt), the 0/1 knapsack (dynamic programming),
continuous test functions, and the classic-control tasks (cart-pole, acrobot) re-implemented from
Gymnasium's, with the code that judges a policy in Gymnasium itself. They are what a GA's results are
read against."""
