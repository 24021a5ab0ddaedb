package broker

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Without an authorizer Kafka grants every supported operation when a
// client asks (kafka-python's admin asks on Metadata v8+ and decodes the
// bits), and answers INT32_MIN ("not requested") when it does not.
func TestAuthorizedOperations(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("ops", 1, nil)
	const notRequested = math.MinInt32
	// Bits by AclOperation code: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
	// DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
	// IDEMPOTENT_WRITE 12.
	const topicOps, clusterOps = 0b1101_1111_1000, 0b1_1111_1010_0000

	metadata := []struct {
		name                 string
		version              int16
		askTopic, askCluster bool
		topic                string
		wantTopic, wantClust int32
	}{
		{"v8 not asked", 8, false, false, "ops", notRequested, notRequested},
		{"v8 both asked", 8, true, true, "ops", topicOps, clusterOps},
		{"v10 topic only", 10, true, false, "ops", topicOps, notRequested},
		{"v12 unknown topic", 12, true, false, "nope", topicOps, notRequested},
	}
	for _, c := range metadata {
		t.Run("Metadata "+c.name, func(t *testing.T) {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = c.version
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(c.topic)
			req.Topics = append(req.Topics, rt)
			req.IncludeTopicAuthorizedOperations = c.askTopic
			req.IncludeClusterAuthorizedOperations = c.askCluster
			resp := tb.roundTrip(req).(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].AuthorizedOperations != c.wantTopic {
				t.Errorf("topic authorized operations %+v, want %d", resp.Topics, c.wantTopic)
			}
			// v11 dropped the cluster field; it is not on the wire then.
			if c.version <= 10 && resp.AuthorizedOperations != c.wantClust {
				t.Errorf("cluster authorized operations %d, want %d", resp.AuthorizedOperations, c.wantClust)
			}
		})
	}

	for _, ask := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = ask
		resp := tb.roundTrip(req).(*kmsg.DescribeClusterResponse)
		want := int32(notRequested)
		if ask {
			want = clusterOps
		}
		if resp.ClusterAuthorizedOperations != want {
			t.Errorf("DescribeCluster asked=%v: authorized operations %d, want %d", ask, resp.ClusterAuthorizedOperations, want)
		}
	}
}
