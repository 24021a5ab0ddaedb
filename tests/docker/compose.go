// Package docker checks docker/compose.yaml and docker/Dockerfile without a
// container engine: it runs each service's command and environment (the
// image's ENV and ENTRYPOINT under the service's environment) as a real
// brook process, with the compose network's host names and ports moved to
// 127.0.0.1 and free ports. make docker-test runs the image itself where
// an engine can build it.
package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// service is what the test needs of a compose service.
type service struct {
	Environment map[string]string `yaml:"environment"`
	Profiles    []string          `yaml:"profiles"`
	Image       string            `yaml:"image"`
	Ports       []string          `yaml:"ports"`
}

type composeFile struct {
	Services map[string]service `yaml:"services"`
}

func readCompose(path string) (composeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return composeFile{}, fmt.Errorf("read compose file: %w", err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		return composeFile{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return c, nil
}

// image is what the Dockerfile's final stage gives a container.
type image struct {
	env        []string // NAME=value, in order
	entrypoint []string
}

// readDockerfile reads the ENV and ENTRYPOINT instructions of the final
// stage, with line continuations joined.
func readDockerfile(path string) (image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return image{}, fmt.Errorf("read Dockerfile: %w", err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var img image
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "FROM "):
			img = image{} // a new stage: only the last one runs
		case strings.HasPrefix(line, "ENV "):
			for _, kv := range strings.Fields(strings.TrimPrefix(line, "ENV ")) {
				if !strings.Contains(kv, "=") {
					return image{}, fmt.Errorf("ENV %q: only NAME=value form is read", kv)
				}
				img.env = append(img.env, kv)
			}
		case strings.HasPrefix(line, "ENTRYPOINT "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT ")), &img.entrypoint); err != nil {
				return image{}, fmt.Errorf("ENTRYPOINT must be in exec (JSON) form: %w", err)
			}
		}
	}
	if len(img.entrypoint) == 0 {
		return image{}, fmt.Errorf("%s: no ENTRYPOINT in the final stage", path)
	}
	return img, nil
}

// endpoint matches the host:port parts of listeners, advertised listeners,
// zookeeper.connect and the metrics listener.
var endpoint = regexp.MustCompile(`([A-Za-z0-9.-]*):([0-9]+)`)

// network moves compose's network to this host: each (service, container
// port) gets a free port on 127.0.0.1.
type network struct {
	ports map[string]int // "service:port" -> host port
	free  func() int
	zk    string // the ZooKeeper the test runs, for "zookeeper:2181"
}

func (n *network) port(svc, port string) int {
	key := svc + ":" + port
	if p, ok := n.ports[key]; ok {
		return p
	}
	p := n.free()
	n.ports[key] = p
	return p
}

// rewrite maps every host:port in value as seen from service self: an
// empty host or localhost is self (ports are published as the same
// number), a service name is that service, "zookeeper" the test's.
func (n *network) rewrite(self, value string, services map[string]service) string {
	return endpoint.ReplaceAllStringFunc(value, func(m string) string {
		sub := endpoint.FindStringSubmatch(m)
		host, port := sub[1], sub[2]
		switch {
		case host == "zookeeper":
			return n.zk
		case host == "" || host == "localhost":
			return fmt.Sprintf("127.0.0.1:%d", n.port(self, port))
		}
		if _, ok := services[host]; ok {
			return fmt.Sprintf("127.0.0.1:%d", n.port(host, port))
		}
		return m
	})
}

// hostEnv is the environment of service's container (image ENV, then the
// service's), moved to this host: endpoints rewritten and log.dirs in
// dataDir.
func (n *network) hostEnv(img image, name string, services map[string]service, dataDir string) []string {
	merged := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := merged[k]; !ok {
			order = append(order, k)
		}
		merged[k] = v
	}
	for _, kv := range img.env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for k, v := range services[name].Environment {
		set(k, v)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range order {
		v := merged[k]
		if k == "KAFKA_CFG_LOG_DIRS" {
			v = dataDir
		} else {
			v = n.rewrite(name, v, services)
		}
		env = append(env, k+"="+v)
	}
	return env
}
