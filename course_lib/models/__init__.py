"""Small models the lectures train or serve: a GAN, a g2p seq2seq model, a deep thin MLP."""
