package metrics

import "github.com/twmb/franz-go/pkg/kmsg"

// kafkaNames are Kafka's ApiKeys names where kmsg spells them otherwise;
// the request label carries Kafka's.
var kafkaNames = map[int16]string{
	4:  "LeaderAndIsr",
	17: "SaslHandshake",
	22: "InitProducerId",
	29: "DescribeAcls",
	30: "CreateAcls",
	31: "DeleteAcls",
	36: "SaslAuthenticate",
	50: "DescribeUserScramCredentials",
	51: "AlterUserScramCredentials",
	67: "AllocateProducerIds",
}

// requestName is the request label of an API key as Kafka's RequestMetrics
// names it.
func requestName(key int16) string {
	if n, ok := kafkaNames[key]; ok {
		return n
	}
	return kmsg.NameForKey(key)
}
