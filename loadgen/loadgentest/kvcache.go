package loadgentest

// kvCache is the engine's pool of KV-cache blocks, with vLLM's prefix
// caching: a block holding a full block of prompt tokens carries the chained
// hash of that prefix, and stays findable by it after its last user releases
// it, until it is evicted to make room. Released blocks join a free queue at
// the tail and blocks are taken from the head, so the least recently released
// is evicted first; a request's blocks are released last-first, so its prefix
// outlives its tail.
//
// Blocks never used yet are handed out first and made on demand (as vLLM
// takes fresh blocks before evicting cached ones), so the block table grows
// with the total ever used, up to the capacity (24 bytes a block: 48 MiB for
// FastProfile's 2^21 blocks), not with the peak in use. kvCache is owned by
// the engine goroutine.
type kvCache struct {
	size    int // tokens per block
	total   int // blocks
	blocks  []kvBlock
	used    int // blocks with ref > 0
	head    int32
	tail    int32
	cached  map[uint64]int32 // hash → block
	caching bool
}

type kvBlock struct {
	hash       uint64 // 0: not cached
	ref        int32
	prev, next int32 // free-queue links, -1 at the ends
}

func newKVCache(p Profile) *kvCache {
	return &kvCache{
		size:    p.BlockSize,
		total:   p.KVCacheTokens / p.BlockSize,
		head:    -1,
		tail:    -1,
		cached:  make(map[uint64]int32),
		caching: !p.DisablePrefixCaching,
	}
}

// free returns the number of blocks that can be allocated.
func (c *kvCache) free() int { return c.total - c.used }

// blocksFor returns the blocks that tokens tokens occupy.
func (c *kvCache) blocksFor(tokens int) int { return (tokens + c.size - 1) / c.size }

// alloc takes one block; the caller has checked free() > 0.
func (c *kvCache) alloc() int32 {
	var id int32
	if len(c.blocks) < c.total {
		id = int32(len(c.blocks))
		c.blocks = append(c.blocks, kvBlock{prev: -1, next: -1})
	} else {
		id = c.head
		c.unlink(id)
		if h := c.blocks[id].hash; h != 0 {
			delete(c.cached, h)
			c.blocks[id].hash = 0
		}
	}
	c.blocks[id].ref = 1
	c.used++
	return id
}

// hits returns how many leading blocks of hashes are cached, and how many of
// those are unreferenced (taking them uses free blocks).
func (c *kvCache) hits(hashes []uint64) (n, idle int) {
	if !c.caching {
		return 0, 0
	}
	for _, h := range hashes {
		id, ok := c.cached[h]
		if !ok {
			break
		}
		if c.blocks[id].ref == 0 {
			idle++
		}
		n++
	}
	return n, idle
}

// take references the cached block holding hash h.
func (c *kvCache) take(h uint64) int32 {
	id := c.cached[h]
	b := &c.blocks[id]
	if b.ref == 0 {
		c.unlink(id)
		c.used++
	}
	b.ref++
	return id
}

// register makes block id findable by the prefix hash h, unless another block
// already holds that prefix.
func (c *kvCache) register(id int32, h uint64) {
	if !c.caching {
		return
	}
	if _, ok := c.cached[h]; ok {
		return
	}
	c.cached[h] = id
	c.blocks[id].hash = h
}

// release drops one reference to each of ids, last first.
func (c *kvCache) release(ids []int32) {
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		b := &c.blocks[id]
		b.ref--
		if b.ref > 0 {
			continue
		}
		c.used--
		b.prev, b.next = c.tail, -1
		if c.tail >= 0 {
			c.blocks[c.tail].next = id
		} else {
			c.head = id
		}
		c.tail = id
	}
}

func (c *kvCache) unlink(id int32) {
	b := &c.blocks[id]
	if b.prev >= 0 {
		c.blocks[b.prev].next = b.next
	} else {
		c.head = b.next
	}
	if b.next >= 0 {
		c.blocks[b.next].prev = b.prev
	} else {
		c.tail = b.prev
	}
	b.prev, b.next = -1, -1
}
