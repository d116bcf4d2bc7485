print("engage")
