"""SQL files the code runs and analysts can read (shipped as package data)."""
