// Reading and writing ClusterSpec as YAML: the hardware zoo (configs/hardware/*.yaml)
// and clusters written inline in experiments. YAML figures are in human units with
// the unit in the key (memory_gb, memory_bandwidth_gb_s, peak_tflops, nic_gbit_s,
// latency_us, ...); ClusterSpec holds SI base units. Bandwidths are per device and
// per direction (NVLink 4 on H100: 900 GB/s bidirectional = 450 GB/s each way).
// See docs/hardware.md for every key. Stateless functions; thread-safe.
#ifndef SHARDSCOPE_CLUSTER_CLUSTER_YAML_H_
#define SHARDSCOPE_CLUSTER_CLUSTER_YAML_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/status.h"
#include "core/yaml_reader.h"

namespace shardscope {

// Builds and validates a cluster from a YAML map. Unknown keys are errors; every
// error names ctx's file/experiment and the dotted field. Overrides work by
// merging YAML first: ClusterFromYaml(MergeYaml(zoo_node, user_node), ctx).
// Derived figures, when absent: scale_up.domain_size (torus: product of
// torus_dims; switched: devices_per_node) and, for a torus,
// scale_up.bandwidth_gb_s = link_bandwidth_gb_s x ScaleUpSpec::TorusLinksPerDevice().
StatusOr<ClusterSpec> ClusterFromYaml(const YAML::Node& node, const YamlContext& ctx);

// Reads and validates one cluster file (a zoo file or a user's own).
StatusOr<ClusterSpec> LoadClusterFile(const std::string& path);

// The inverse of ClusterFromYaml (derived figures written out), for metadata and
// for `ClusterFromYaml(ClusterToYaml(c))` round trips.
YAML::Node ClusterToYaml(const ClusterSpec& cluster);

// The zoo shipped with the sources: <SHARDSCOPE_SOURCE_DIR>/configs/hardware.
std::string DefaultHardwareDir();
// Names (file stems) of the *.yaml files in hardware_dir, sorted; empty when the
// directory does not exist.
std::vector<std::string> ListZooClusters(const std::string& hardware_dir);
// Path of zoo cluster `name` (hardware_dir/name.yaml); NotFound lists the zoo.
StatusOr<std::string> ZooClusterPath(const std::string& name, const std::string& hardware_dir);
// LoadClusterFile(ZooClusterPath(name, hardware_dir)).
StatusOr<ClusterSpec> LoadZooCluster(const std::string& name, const std::string& hardware_dir);

// A command's --hardware: an existing YAML file, else a zoo name in the
// default hardware folder.
StatusOr<ClusterSpec> LoadClusterArg(const std::string& name_or_file);

}  // namespace shardscope

#endif  // SHARDSCOPE_CLUSTER_CLUSTER_YAML_H_
