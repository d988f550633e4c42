"""CLIPScore of image–text pairs with open_clip, shard by shard."""
