"""Small pieces every feature shares: the input rules, one JSON form, keyset cursors, text
helpers.
"""
