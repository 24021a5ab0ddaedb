package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/brook-mq/brook/controller"
)

// producerIDBlockSize is how many ids a broker reserves at once, as Kafka's
// ProducerIdManager does.
const producerIDBlockSize = controller.ProducerIDBlockSize

// producerIDs hands out producer ids from blocks reserved in the store.
type producerIDs struct {
	store    controller.Store
	brokerID int32

	mu        sync.Mutex
	nextID    int64
	blockEnd  int64 // inclusive
	haveBlock bool
}

func (p *producerIDs) next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.haveBlock || p.nextID > p.blockEnd {
		start, end, err := controller.NextProducerIDBlock(ctx, p.store, p.brokerID, producerIDBlockSize)
		if err != nil {
			return -1, fmt.Errorf("reserve producer id block: %w", err)
		}
		p.nextID, p.blockEnd, p.haveBlock = start, end, true
	}
	id := p.nextID
	p.nextID++
	return id, nil
}
