"""The built-in catalog: realistic items in three price tiers, with typical list prices."""

from __future__ import annotations

from decimal import Decimal

from dealroom.protocol.scenario import Item, Tier

TIER_RANGES: dict[Tier, tuple[Decimal, Decimal]] = {
    "low": (Decimal(10), Decimal(100)),
    "mid": (Decimal(1_000), Decimal(10_000)),
    "high": (Decimal(100_000), Decimal(1_000_000)),
}
"""List prices of each tier lie in [low, high] (US dollars)."""

# (tier, name, category, description, typical list price)
_ROWS: tuple[tuple[Tier, str, str, str, int], ...] = (
    (
        "low",
        "Used hardcover cookbook",
        "books",
        "A well-kept copy of a popular Italian cookbook, light shelf wear.",
        18,
    ),
    (
        "low",
        "Wireless earbuds",
        "electronics",
        "Bluetooth earbuds with charging case, one year old, all tips included.",
        65,
    ),
    (
        "low",
        "Cast-iron skillet",
        "kitchen",
        "A 12-inch pre-seasoned cast-iron skillet, barely used.",
        35,
    ),
    (
        "low",
        "Board game bundle",
        "toys",
        "Three family board games, complete, boxes slightly worn.",
        45,
    ),
    (
        "low",
        "Yoga mat and blocks",
        "sports",
        "A 6 mm yoga mat with two cork blocks and a strap.",
        30,
    ),
    (
        "low",
        "Vintage vinyl record",
        "music",
        "A 1970s jazz LP in very good condition, original sleeve.",
        55,
    ),
    ("low", "Desk lamp", "home", "An adjustable LED desk lamp with dimmer and USB port.", 25),
    (
        "low",
        "Children's bicycle helmet",
        "sports",
        "A certified kids' helmet, size S, no impacts.",
        20,
    ),
    (
        "low",
        "Mechanical keyboard",
        "electronics",
        "A tenkeyless mechanical keyboard with brown switches.",
        90,
    ),
    (
        "low",
        "Houseplant in ceramic pot",
        "garden",
        "A healthy 60 cm monstera in a glazed ceramic pot.",
        40,
    ),
    (
        "low",
        "Pair of hiking socks",
        "clothing",
        "Two pairs of merino hiking socks, new with tags.",
        12,
    ),
    (
        "mid",
        "Used road bicycle",
        "sports",
        "A carbon road bike, 56 cm frame, Shimano 105, about 3,000 km ridden.",
        1_800,
    ),
    (
        "mid",
        "Laptop",
        "electronics",
        "A 14-inch laptop, 32 GB RAM, 1 TB SSD, under warranty for another year.",
        2_200,
    ),
    (
        "mid",
        "Espresso machine",
        "kitchen",
        "A dual-boiler espresso machine with grinder, regularly descaled.",
        1_500,
    ),
    (
        "mid",
        "Upright piano",
        "music",
        "A 20-year-old upright piano, tuned last spring, buyer arranges moving.",
        4_500,
    ),
    (
        "mid",
        "Mirrorless camera kit",
        "electronics",
        "A full-frame mirrorless body with two lenses, low shutter count.",
        3_200,
    ),
    ("mid", "Sofa", "furniture", "A three-seat leather sofa, five years old, no tears.", 1_200),
    (
        "mid",
        "Electric scooter",
        "vehicles",
        "A commuter e-scooter, 40 km range, new battery.",
        1_100,
    ),
    ("mid", "Designer watch", "jewelry", "A pre-owned automatic watch with box and papers.", 6_500),
    ("mid", "Home gym set", "sports", "A squat rack, barbell and 150 kg of plates.", 2_000),
    (
        "mid",
        "Used motorcycle",
        "vehicles",
        "A 2017 mid-size motorcycle, 22,000 km, full service history.",
        7_800,
    ),
    (
        "mid",
        "Dining table and chairs",
        "furniture",
        "A solid oak table seating eight, with six chairs.",
        2_600,
    ),
    (
        "high",
        "Family house",
        "real estate",
        "A three-bedroom house with a garden in a quiet suburb.",
        450_000,
    ),
    (
        "high",
        "City apartment",
        "real estate",
        "A two-bedroom apartment near the centre, recently renovated.",
        320_000,
    ),
    (
        "high",
        "Small bakery business",
        "business",
        "An established neighbourhood bakery with equipment and lease.",
        180_000,
    ),
    (
        "high",
        "Sailing yacht",
        "vehicles",
        "A 12 m sailing yacht, 2010, new sails, berth not included.",
        240_000,
    ),
    (
        "high",
        "Vintage sports car",
        "vehicles",
        "A restored 1960s sports car with matching numbers.",
        390_000,
    ),
    (
        "high",
        "Vineyard plot",
        "land",
        "Five hectares of planted vineyard with water rights.",
        850_000,
    ),
    (
        "high",
        "Commercial food truck fleet",
        "business",
        "Four fitted food trucks with permits and a commissary lease.",
        260_000,
    ),
    (
        "high",
        "Original painting",
        "art",
        "A large oil painting by a listed mid-century artist, with provenance.",
        150_000,
    ),
    (
        "high",
        "Mountain cabin",
        "real estate",
        "A four-season log cabin on two acres near a ski area.",
        620_000,
    ),
    (
        "high",
        "Software startup",
        "business",
        "A profitable niche SaaS business with 400 paying customers.",
        950_000,
    ),
)

CATALOG: dict[Tier, tuple[tuple[Item, Decimal], ...]] = {
    tier: tuple(
        (Item(name=name, category=category, description=description), Decimal(price))
        for row_tier, name, category, description, price in _ROWS
        if row_tier == tier
    )
    for tier in TIER_RANGES
}
"""Items of each tier, with their typical list price."""
