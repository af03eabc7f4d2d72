"""SONiC's CONFIG_DB defaults as its YANG models state them. GENERATED: do not edit; run

    .venv/bin/python scripts/gen_yang_defaults.py <reference>/sonic-yang/202411 <reference>/sonic-yang/master

(<reference>: $FABLAB_REFERENCE or ../shared/reference) from SONiC's YANG models of 202411 and master
(sonic-buildimage src/sonic-yang-models/yang-models; <reference>/README.md names the commits).

DEFAULTS: release 202411, the one fablab targets: every CONFIG_DB table of the models with
a leaf or leaf-list that has a `default` (its own, a refine's or its typedef's), table -> {field:
default}: 75 tables, 204 fields, the YANG text as written.
MASTER_DIFFERS: each field whose default master's YANG states otherwise (None: it states
none), the tables only master has included.
WHEN: defaults that hold only where their leaf's YANG `when` does.
METADATA_ONLY: fields of address rows that change nothing, and the source that says so.
"""
from __future__ import annotations

RELEASE = '202411'
OTHER_RELEASE = 'master'

DEFAULTS: dict[str, dict[str, str]] = {
    'AAA': {'debug': 'False', 'failthrough': 'False', 'fallback': 'False', 'login': 'local', 'trace': 'False'},
    'ACL_TABLE': {'ports': '', 'stage': 'INGRESS'},
    'ACL_TABLE_TYPE': {'ACTIONS': ''},
    'ASIC_SENSORS': {'admin_status': 'enable', 'interval': '10 '},
    'AUTO_TECHSUPPORT': {'available_mem_threshold': '10.0', 'min_available_mem': '200'},
    'AUTO_TECHSUPPORT_FEATURE': {'available_mem_threshold': '10.0'},
    'BANNER_MESSAGE': {
        'login': 'Debian GNU/Linux 11',
        'logout': '',
        'motd': ('You are on\n ____   ___  _   _ _  ____\n/ ___| / _ \\| \\ | (_)/ ___|\n\\___ \\| | | |  \\| | | '
                 '|\n ___) | |_| | |\\  | | |___\n|____/ \\___/|_| \\_|_|\\____|\n-- Software for Open Networking '
                 'in the Cloud --\nUnauthorized access and/or use are prohibited.\nAll access and/or use are '
                 'subject to monitoring.\nHelp:    https://sonic-net.github.io/SONiC/\n'),
        'state': 'disabled',
    },
    'BGP_BBR': {'status': 'enabled'},
    'BGP_DEVICE_GLOBAL': {'idf_isolation_state': 'unisolated', 'tsa_enabled': 'false', 'wcmp_enabled': 'false'},
    'BGP_GLOBALS_AF': {'max_ebgp_paths': '1', 'max_ibgp_paths': '1'},
    'BMP': {'bgp_neighbor_table': 'true', 'bgp_rib_in_table': 'false', 'bgp_rib_out_table': 'false'},
    'BUFFER_PG': {'profile': '0'},
    'BUFFER_POOL': {'xoff': '0'},
    'BUFFER_PROFILE': {'headroom_type': 'static', 'xoff': '0', 'xon': '0', 'xon_offset': '0'},
    'BUFFER_QUEUE': {'profile': '0'},
    'CHASSIS_MODULE': {'admin_status': 'up'},
    'CONSOLE_PORT': {'flow_control': '0'},
    'CONSOLE_SWITCH': {'enabled': 'no'},
    'COPP_GROUP': {
        'cbs': '0',
        'cir': '0',
        'green_action': 'forward',
        'queue': '0',
        'red_action': 'forward',
        'trap_priority': '0',
        'yellow_action': 'forward',
    },
    'DASH_ACL_RULE': {'terminating': 'false'},
    'DASH_VNET_MAPPING_TABLE': {'use_dst_vni': 'false'},
    'DEVICE_METADATA': {
        'default_bgp_status': 'up',
        'default_pfcwd_status': 'disable',
        'docker_routing_config_mode': 'unified',
        'frr_mgmt_framework_config': 'false',
        'nexthop_group': 'disabled',
        'suppress-fib-pending': 'disabled',
        'synchronous_mode': 'enable',
        'timezone': 'UTC',
        'yang_config_validation': 'disable',
    },
    'FABRIC_MONITOR': {
        'monCapacityThreshWarn': '10',
        'monErrThreshCrcCells': '1',
        'monErrThreshRxCells': '61035156',
        'monPollThreshIsolation': '1',
        'monPollThreshRecovery': '8',
        'monState': 'disable',
    },
    'FABRIC_PORT': {'forceUnisolateStatus': '0', 'isolateStatus': 'False'},
    'FEATURE': {
        'auto_restart': 'enabled',
        'check_up_status': 'false',
        'delayed': 'false',
        'has_global_scope': 'false',
        'has_per_asic_scope': 'false',
        'has_per_dpu_scope': 'false',
        'high_mem_alert': 'disabled',
        'set_owner': 'local',
        'state': 'enabled',
        'support_syslog_rate_limit': 'false',
    },
    'FIPS': {'enable': 'false', 'enforce': 'false'},
    'INTERFACE': {'ipv6_use_link_local_only': 'disable', 'nat_zone': '0'},
    'KUBERNETES_MASTER': {'disable': 'false', 'insecure': 'true', 'port': '6443'},
    'LDAP': {'bind_timeout': '5', 'port': '389', 'version': '3'},
    'LDAP_SERVER': {'priority': '1'},
    'LLDP': {
        'enabled': 'true',
        'hello_time': '30',
        'multiplier': '4',
        'supp_mgmt_address_tlv': 'false',
        'supp_system_capabilities_tlv': 'false',
    },
    'LLDP_PORT': {'enabled': 'true'},
    'LOGGER': {'LOGOUTPUT': 'SYSLOG'},
    'LOOPBACK_INTERFACE': {'nat_zone': '0'},
    'MACSEC_PROFILE': {
        'cipher_suite': 'GCM-AES-128',
        'enable_replay_protect': 'false',
        'policy': 'security',
        'priority': '255',
        'rekey_period': '0',
        'send_sci': 'true',
    },
    'MCLAG_DOMAIN': {'keepalive_interval': '1', 'session_timeout': '30'},
    'MEMORY_STATISTICS': {'enabled': 'false', 'retention_period': '15', 'sampling_interval': '5'},
    'MGMT_PORT': {'admin_status': 'up', 'mtu': '1500'},
    'MGMT_VRF_CONFIG': {'mgmtVrfEnabled': 'false'},
    'MIRROR_SESSION': {'direction': 'BOTH', 'gre_type': '0x88be', 'type': 'ERSPAN'},
    'MUX_CABLE': {'cable_type': 'active-standby', 'state': 'auto'},
    'MUX_LINKMGR': {
        'interval_sec': '300',
        'interval_v4': '100',
        'interval_v6': '1000',
        'kill_radv': 'True',
        'negative_signal_count': '3',
        'oscillation_enabled': 'true',
        'positive_signal_count': '1',
    },
    'NAT_BINDINGS': {'nat_type': 'snat'},
    'NAT_GLOBAL': {
        'admin_mode': 'disabled',
        'nat_tcp_timeout': '86400',
        'nat_timeout': '600',
        'nat_udp_timeout': '300',
    },
    'NTP': {'admin_state': 'enabled', 'authentication': 'disabled', 'dhcp': 'enabled', 'server_role': 'enabled'},
    'NTP_KEY': {'trusted': 'no', 'type': 'md5'},
    'NTP_SERVER': {
        'admin_state': 'enabled',
        'association_type': 'server',
        'iburst': 'on',
        'trusted': 'no',
        'version': '4',
    },
    'PASSW_HARDENING': {'state': 'disabled'},
    'PBH_RULE': {'flow_counter': 'DISABLED', 'packet_action': 'SET_ECMP_HASH'},
    'POLICER': {
        'cbs': '0',
        'cir': '0',
        'green_packet_action': 'forward',
        'red_packet_action': 'forward',
        'yellow_packet_action': 'forward',
    },
    'PORT': {'admin_status': 'down', 'dhcp_rate_limit': '300', 'role': 'Ext'},
    'PORTCHANNEL_INTERFACE': {'ipv6_use_link_local_only': 'disable', 'nat_zone': '0'},
    'RADIUS': {'auth_type': 'pap', 'retransmit': '3', 'timeout': '5'},
    'RADIUS_SERVER': {'auth_port': '1812', 'auth_type': 'pap', 'retransmit': '3', 'timeout': '5'},
    'RESTAPI': {'allow_insecure': 'false', 'client_auth': 'true'},
    'SCHEDULER': {'meter_type': 'bytes', 'type': 'WRR', 'weight': '1'},
    'SERIAL_CONSOLE': {'inactivity_timeout': '15', 'sysrq_capabilities': 'disabled'},
    'SFLOW': {'admin_state': 'down', 'polling_interval': '20', 'sample_direction': 'rx'},
    'SFLOW_COLLECTOR': {'collector_port': '6343'},
    'SFLOW_SESSION': {'admin_state': 'up', 'sample_direction': 'rx'},
    'SNMP_USER': {'SNMP_USER_AUTH_TYPE': '', 'SNMP_USER_ENCRYPTION_TYPE': ''},
    'SSH_SERVER': {
        'authentication_retries': '6',
        'inactivity_timeout': '15',
        'login_timeout': '120',
        'max_sessions': '0',
        'ports': '22',
    },
    'STATIC_NAPT': {'nat_type': 'dnat'},
    'STATIC_NAT': {'nat_type': 'dnat'},
    'STATIC_ROUTE': {'advertise': 'false', 'bfd': 'false', 'blackhole': 'false', 'distance': '0'},
    'STORMOND_CONFIG': {'daemon_polling_interval': '3600', 'fsstats_sync_interval': '86400'},
    'SUBNET_DECAP': {'status': 'disable'},
    'SYSLOG_CONFIG': {'format': 'standard', 'severity': 'notice'},
    'TACPLUS': {'auth_type': 'pap', 'timeout': '5'},
    'TACPLUS_SERVER': {'auth_type': 'pap', 'priority': '1', 'tcp_port': '49', 'timeout': '5'},
    'TELEMETRY_CLIENT': {'report_interval': '5000', 'unidirectional': 'true'},
    'VLAN_INTERFACE': {'ipv6_use_link_local_only': 'disable', 'nat_zone': '0'},
    'VOQ_INBAND_INTERFACE': {'inband_type': 'port'},
    'VRF': {'fallback': 'false', 'vni': '0'},
    'WRED_PROFILE': {
        'ecn': 'ecn_none',
        'green_drop_probability': '100',
        'red_drop_probability': '100',
        'wred_green_enable': 'false',
        'wred_red_enable': 'false',
        'wred_yellow_enable': 'false',
        'yellow_drop_probability': '100',
    },
}

MASTER_DIFFERS: dict[str, dict[str, str | None]] = {
    'BGP_AGGREGATE_ADDRESS': {
        'aggregate-address-prefix-list': '',
        'as-set': 'false',
        'bbr-required': 'false',
        'contributing-address-prefix-list': '',
        'summary-only': 'false',
    },
    'BGP_DEVICE_GLOBAL': {'chassis_tsa_supported': 'false'},
    'DEBUG_COUNTER': {
        'drop_count_threshold': '100',
        'drop_monitor_status': 'disabled',
        'incident_count_threshold': '3',
        'window': '900',
    },
    'DEBUG_DROP_MONITOR': {'status': 'disabled'},
    'DEVICE_METADATA': {
        'dpu_auto_recovery': 'disable',
        'has_sonic_dhcpv4_relay': 'false',
        'orch_northbond_dash_zmq_enabled': 'true',
        'ring_thread_enabled': 'false',
        'syslog_counter': 'false',
        'syslog_with_osversion': 'false',
        'use_template_render_for_restore': 'true',
        'zebra_nexthop': 'enabled',
    },
    'DHCPV4_RELAY': {
        'agent_relay_mode': 'discard',
        'link_selection': 'disable',
        'max_hop_count': '4',
        'server_id_override': 'disable',
        'vrf_selection': 'disable',
    },
    'DHCP_SERVER_IPV4_CUSTOMIZED_OPTIONS': {'always_send': 'true'},
    'DNS_OPTIONS': {'attempts': '2', 'ndots': '1', 'timeout': '5'},
    'EVPN_ETHERNET_SEGMENT': {'df_pref': '32767'},
    'EVPN_MH_GLOBAL': {'mac_holdtime': '1080', 'neigh_holdtime': '1080', 'startup_delay': '300'},
    'HEARTBEAT': {'alert_interval': '60000', 'heartbeat_interval': '10000'},
    'KUBERNETES_MASTER': {'insecure': 'false'},
    'LEAK_CONTROL_POLICY': {
        'rack_mgr_critical_alert_action': 'syslog_only',
        'rack_mgr_leak_policy': 'enabled',
        'rack_mgr_minor_alert_action': 'syslog_only',
        'system_critical_leak_action': 'power_off',
        'system_leak_policy': 'enabled',
        'system_minor_leak_action': 'syslog_only',
    },
    'LOOPBACK_INTERFACE': {'admin_status': 'up'},
    'MAC_MOVE_GUARD': {
        'action': 'DISABLE_PORT',
        'action_interval': '600',
        'detect_interval': '5',
        'enabled': 'false',
        'threshold': '1000',
    },
    'MUX_CABLE': {'neighbor_mode': 'host-route', 'prober_type': 'software'},
    'POLICER': {'cbs': None, 'cir': None},
    'PORT': {'fast_linkup': 'false'},
    'PREFIX_SET': {'mode': 'IPv4'},
    'SRV6_MY_LOCATORS': {'arg_len': '0', 'block_len': '32', 'func_len': '16', 'node_len': '16', 'vrf': 'default'},
    'SRV6_MY_SIDS': {'decap_vrf': 'default'},
    'SSH_SERVER': {'password_authentication': 'true'},
    'STP': {'forward_delay': '15', 'hello_time': '2', 'max_age': '20', 'priority': '32768', 'rootguard_timeout': '30'},
    'STP_MST': {'forward_delay': '15', 'hello_time': '2', 'max_age': '20', 'max_hops': '20'},
    'STP_MST_INST': {'bridge_priority': '32768'},
    'STP_MST_PORT': {'path_cost': '200', 'priority': '128'},
    'STP_PORT': {
        'bpdu_guard': 'false',
        'bpdu_guard_do_disable': 'false',
        'edge_port': 'false',
        'path_cost': '200',
        'portfast': 'false',
        'priority': '128',
        'root_guard': 'false',
        'uplink_fast': 'false',
    },
    'STP_VLAN': {'forward_delay': '15', 'hello_time': '2', 'max_age': '20', 'priority': '32768'},
    'STP_VLAN_PORT': {'path_cost': '200', 'priority': '128'},
    'TACPLUS': {'key_encrypt': 'false'},
    'TACPLUS_SERVER': {'key_encrypt': 'false'},
    'VLAN_INTERFACE': {'static_anycast_gateway': 'false'},
    'VLAN_SUB_INTERFACE': {'ipv6_use_link_local_only': 'disable'},
    'ZTP': {'inband': 'true', 'ipv4': 'true', 'ipv6': 'true', 'out-of-band': 'true'},
}

WHEN: dict[str, dict[str, str]] = {
    'COPP_GROUP': {'yellow_action': "((current()/../mode = 'sr_tcm') or (current()/../mode = 'tr_tcm'))"},
    'MIRROR_SESSION': {'gre_type': "current()/../type = 'ERSPAN'"},
    'POLICER': {'yellow_packet_action': "((current()/../mode = 'sr_tcm') or (current()/../mode = 'tr_tcm'))"},
}

METADATA_ONLY: dict[str, dict[str, str]] = {
    'INTERFACE': {
        'family': ("the prefix's own family; sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an "
                   "address row's fields and writes family from the prefix (ip_prefix.isV4()); "
                   "orchagent/intfsorch.cpp reads no family; YANG: 'family leaf needed for backward compatibility', "
                   'a must that it match ip-prefix'),
        'scope': ("sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an address row's fields and "
                  "writes scope 'global' itself; orchagent/intfsorch.cpp reads no scope"),
    },
    'LOOPBACK_INTERFACE': {
        'family': ("the prefix's own family; sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an "
                   "address row's fields and writes family from the prefix (ip_prefix.isV4()); "
                   "orchagent/intfsorch.cpp reads no family; YANG: 'family leaf needed for backward compatibility', "
                   'a must that it match ip-prefix'),
        'scope': ("sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an address row's fields and "
                  "writes scope 'global' itself; orchagent/intfsorch.cpp reads no scope"),
    },
    'VLAN_INTERFACE': {
        'family': ("the prefix's own family; sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an "
                   "address row's fields and writes family from the prefix (ip_prefix.isV4()); "
                   "orchagent/intfsorch.cpp reads no family; YANG: 'family leaf needed for backward compatibility', "
                   'a must that it match ip-prefix'),
        'scope': ("sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask never reads an address row's fields and "
                  "writes scope 'global' itself; orchagent/intfsorch.cpp reads no scope"),
    },
}
